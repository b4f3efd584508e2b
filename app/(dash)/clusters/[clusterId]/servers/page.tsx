import { ServersPage } from "@/components/servers/ServersPage";

export default async function Page({ params }: { params: Promise<{ clusterId: string }> }) {
  const { clusterId } = await params;
  return <ServersPage clusterId={clusterId} />;
}
