import { ClusterList } from "@/components/ClusterList";

export default function ClustersPage() {
  return <ClusterList />;
}
