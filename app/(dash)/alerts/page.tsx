import { AlertsPage } from "@/components/alerts/AlertsPage";

export default function Page() {
  return <AlertsPage />;
}
