import { BrandingSettings } from "@/components/branding/BrandingSettings";

export default async function Page({ params }: { params: Promise<{ clusterId: string }> }) {
  const { clusterId } = await params;
  return <BrandingSettings clusterId={clusterId} />;
}
