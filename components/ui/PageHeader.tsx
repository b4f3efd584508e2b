"use client";
import { useQuery } from "@tanstack/react-query";
import { ClusterNav } from "@/components/ClusterNav";
import { useTRPC } from "@/lib/trpc";

/** The cluster tabs, with the cluster's name fetched once per page. */
export function ClusterPageNav({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const cluster = useQuery(trpc.clusters.get.queryOptions({ clusterId }));
  return <ClusterNav clusterId={clusterId} clusterName={cluster.data?.name} />;
}
