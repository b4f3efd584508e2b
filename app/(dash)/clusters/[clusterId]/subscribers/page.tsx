import { SubscribersPage } from "@/components/subscribers/SubscribersPage";

export default async function Page({ params }: { params: Promise<{ clusterId: string }> }) {
  const { clusterId } = await params;
  return <SubscribersPage clusterId={clusterId} />;
}
