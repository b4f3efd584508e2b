import { ClusterOverview } from "@/components/ClusterOverview";

export default async function ClusterPage({ params }: { params: Promise<{ clusterId: string }> }) {
  const { clusterId } = await params;
  return <ClusterOverview clusterId={clusterId} />;
}
