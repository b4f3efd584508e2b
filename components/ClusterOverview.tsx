"use client";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";

/** The cluster's servers, inbounds and routes as plain lists (the diagram builds on this). */
export function ClusterOverview({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const topology = useQuery(trpc.topology.get.queryOptions({ clusterId }));
  if (topology.error) return <main className="p-6"><p role="alert" className="text-red-700">{errorMessage(topology.error)}</p></main>;
  if (!topology.data) return <main className="p-6 text-slate-500">Loading…</main>;
  const { cluster, servers, inbounds, routes } = topology.data;
  return (
    <main className="p-6">
      <h1 className="mb-4 text-2xl font-semibold">{cluster.name}</h1>
      <div className="grid gap-6 md:grid-cols-2">
        <section aria-label="Servers">
          <h2 className="mb-2 text-lg font-semibold">Servers</h2>
          <ul className="flex flex-col gap-2">
            {servers.map((s) => (
              <li key={s.id} className="rounded border border-slate-200 bg-white p-3">
                <div className="font-medium">{s.name} <span className="text-sm text-slate-500">{s.address}</span></div>
                <ul className="mt-1 text-sm">
                  {inbounds.filter((i) => i.serverId === s.id).map((i) => (
                    <li key={i.id}>{i.name} :{i.port}</li>
                  ))}
                </ul>
              </li>
            ))}
          </ul>
        </section>
        <section aria-label="Routes">
          <h2 className="mb-2 text-lg font-semibold">Routes</h2>
          <ul className="flex flex-col gap-2">
            {routes.map((r) => (
              <li key={r.id} className="rounded border border-slate-200 bg-white p-3">
                <div className="font-medium">{r.name}</div>
                <ul className="mt-1 text-sm">
                  {inbounds.filter((i) => i.routeId === r.id).map((i) => (
                    <li key={i.id}>{i.name}</li>
                  ))}
                </ul>
              </li>
            ))}
          </ul>
        </section>
      </div>
    </main>
  );
}
