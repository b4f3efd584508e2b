import { TopologyDiagram } from "@/components/diagram/TopologyDiagram";

export default async function ClusterPage({ params }: { params: Promise<{ clusterId: string }> }) {
  const { clusterId } = await params;
  return <TopologyDiagram clusterId={clusterId} />;
}
