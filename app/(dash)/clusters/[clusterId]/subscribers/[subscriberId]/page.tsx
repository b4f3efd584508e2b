import { SubscriberDetail } from "@/components/subscribers/SubscriberDetail";
import { isSubscriberTab } from "@/components/subscribers/subscriber-tabs";

export default async function Page({ params, searchParams }: { params: Promise<{ clusterId: string; subscriberId: string }>; searchParams: Promise<{ tab?: string | string[] }> }) {
  const [{ clusterId, subscriberId }, { tab }] = await Promise.all([params, searchParams]);
  const first = Array.isArray(tab) ? tab[0] : tab;
  return <SubscriberDetail clusterId={clusterId} subscriberId={subscriberId} tab={isSubscriberTab(first) ? first : "usage"} />;
}
