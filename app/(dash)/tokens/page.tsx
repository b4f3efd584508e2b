import { ApiTokensPage } from "@/components/tokens/ApiTokensPage";

export default function Page() {
  return <ApiTokensPage />;
}
