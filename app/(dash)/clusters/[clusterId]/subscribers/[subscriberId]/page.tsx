import { ExplainPanel } from "@/components/balancer/ExplainPanel";

export default async function Page({ params }: { params: Promise<{ clusterId: string; subscriberId: string }> }) {
  const { clusterId, subscriberId } = await params;
  return <ExplainPanel clusterId={clusterId} subscriberId={subscriberId} />;
}
