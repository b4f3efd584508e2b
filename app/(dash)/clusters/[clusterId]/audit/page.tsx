import { AuditPage } from "@/components/audit/AuditPage";

export default async function Page({ params }: { params: Promise<{ clusterId: string }> }) {
  const { clusterId } = await params;
  return <AuditPage clusterId={clusterId} />;
}
