import { TeamPage } from "@/components/team/TeamPage";

export default function Page() {
  return <TeamPage />;
}
