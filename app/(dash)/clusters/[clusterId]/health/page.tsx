import { HealthPage } from "@/components/health/HealthPage";

export default async function ClusterHealthPage({ params }: { params: Promise<{ clusterId: string }> }) {
  const { clusterId } = await params;
  return <HealthPage clusterId={clusterId} />;
}
