import { ClusterNav } from "@/components/ClusterNav";

/** Every page of one cluster: its tabs, then the page. */
export default async function ClusterLayout({ children, params }: { children: React.ReactNode; params: Promise<{ clusterId: string }> }) {
  const { clusterId } = await params;
  return (
    <>
      <ClusterNav clusterId={clusterId} />
      {children}
    </>
  );
}
