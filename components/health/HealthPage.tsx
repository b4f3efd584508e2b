"use client";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import { useEffect, useRef, useState } from "react";
import Link from "next/link";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";
import { ago, formatBps, HEARTBEAT_EXPLAINED, heartbeatLine, statusStyle } from "@/core/format";
import { plural } from "@/core/plural";
import { MeshGrid } from "./MeshGrid";
import { ProbeConfigEditor, ReportIntervalEditor } from "./ProbeConfigEditor";
import { ProbeOverrides } from "./ProbeOverrides";
import { HistoryCharts } from "./HistoryCharts";
import { ReportedUsage } from "./ReportedUsage";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@/server/api/root";
import { PageSkeleton } from "@/components/ui/Skeleton";
import { useCanEdit } from "@/components/shell/operator";

type HealthServer = inferRouterOutputs<AppRouter>["monitoring"]["health"]["servers"][number];

/**
 * What the balancer knows of a server's link: the capacity the operator set, or the learned
 * peak and whether a report ever showed the link full. Until then the peak is only a lower
 * bound, and new users arriving together are split evenly across such servers, so the line
 * points to where the capacity is set.
 */
function LinkCapacity({ clusterId, server: s, report, now }: { clusterId: string; server: HealthServer; report: NonNullable<HealthServer["report"]>; now: number }) {
  const canEdit = useCanEdit();
  if (s.capacityMbps !== null) {
    return (
      <div className="text-slate-600" title="The operator set this link's capacity: the balancer uses it instead of the learned peak.">
        peak {formatBps(report.peakBps)} · link capacity set: {formatBps(s.capacityMbps * 1e6)}
      </div>
    );
  }
  return (
    <div
      className="text-slate-600"
      title="A load shows a link full when its users got less each than the users of another server of this cluster: an inference (a server whose users ask for less looks the same), so the capacity you set wins over it. Once a link was seen full, the balancer takes its learned peak as what it carries, never less than what it carried when last seen full; until then the peak is only what its users asked for, and new users arriving together are split evenly across such servers."
    >
      peak {formatBps(report.peakBps)} ·{" "}
      {report.heldBackAt
        ? `link last seen full${report.heldBackBps ? ` at ${formatBps(report.heldBackBps)}` : ""} ${ago(report.heldBackAt, now)}`
        : "a lower bound: link never seen full"}
      {canEdit && (
        <>
          {" · "}
          <Link href={`/clusters/${clusterId}/servers`} className="font-medium text-sky-700 underline-offset-2 hover:underline">
            set the link capacity
          </Link>
        </>
      )}
    </div>
  );
}

const HEARTBEAT_TONES = { ok: "text-green-700", warn: "text-amber-700", bad: "text-red-700", muted: "text-slate-500" } as const;

/** The fast failover path for this server, as of the page's last refresh (core/format.ts heartbeatLine). */
function Heartbeat({ heartbeat }: { heartbeat: HealthServer["heartbeat"] }) {
  const line = heartbeatLine(heartbeat);
  return (
    <div
      data-testid="heartbeat"
      data-phase={heartbeat.lost ? "lost" : heartbeat.phase}
      className={`mt-1 max-w-xs text-xs ${HEARTBEAT_TONES[line.tone]}`}
      title={HEARTBEAT_EXPLAINED}
    >
      {line.text}
    </div>
  );
}

/**
 * The figure the balancer places new users on: the load the agent sends in its heartbeats
 * every 10 s while it keeps coming, else the report. Nothing for an agent that never sent one.
 */
function BalancingLoad({ load, now }: { load: NonNullable<HealthServer["report"]>["load"]; now: number }) {
  if (!load) return null;
  if (!load.current) {
    return (
      <div className="text-amber-700" title="This agent sent its load in heartbeats before, but none arrived around its last report: the balancer uses the report's figures, up to one report interval old.">
        load from heartbeats stopped {ago(load.at, now)} · balanced on reports
      </div>
    );
  }
  return (
    <div
      className="text-slate-600"
      data-testid="balancing-load"
      title="The agent measures the users who moved traffic and the traffic every 10 s and sends them in its heartbeats: the balancer places new users on these figures, not on the report's, so a burst shows within seconds."
    >
      load {ago(load.at, now)}: {plural(load.usersOnline, "user")} · {formatBps(load.trafficBps)}
    </div>
  );
}

/** The cluster's health: status per server, last report and probe, the mesh, probe settings. */
export function HealthPage({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  // Live: the change bus drives refetches; the interval is only a safety net.
  const health = useQuery({ ...trpc.monitoring.health.queryOptions({ clusterId }), refetchInterval: 10_000 });
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const refetch = () => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      void queryClient.invalidateQueries({ queryKey: trpc.monitoring.health.queryKey({ clusterId }) });
    }, 150);
  };
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  useSubscription(trpc.topology.onChange.subscriptionOptions({ clusterId }, { onData: refetch, onStarted: refetch }));
  // "12 s ago" stays current between refetches.
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);

  const data = health.data;
  return (
    <div>
      <main className="flex min-w-0 flex-col gap-8 p-4 sm:p-6">
        {health.error ? (
          <p role="alert" className="text-red-700">
            {errorMessage(health.error)}
          </p>
        ) : !data ? (
          <PageSkeleton label="Loading server health" />
        ) : (
          <>
            {data.warnings.length > 0 && (
              <section aria-label="Monitoring warnings" className="rounded-md border border-amber-300 bg-amber-50 p-3 text-sm text-amber-900">
                <ul className="list-disc pl-5">
                  {data.warnings.map((w) => (
                    <li key={w.id}>{w.message}</li>
                  ))}
                </ul>
              </section>
            )}
            <section aria-labelledby="health-servers">
              <h1 id="health-servers" className="mb-3 text-xl font-semibold">
                Server health
              </h1>
              <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
                <table className="table-cards min-w-full text-sm">
                  <thead className="bg-slate-50 text-left text-xs uppercase tracking-wide text-slate-500">
                    <tr>
                      <th className="px-3 py-2">Server</th>
                      <th className="px-3 py-2">Status</th>
                      <th className="px-3 py-2">Last report</th>
                      <th className="px-3 py-2">Last probe</th>
                      <th className="px-3 py-2">Failure streak</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.servers.map((s) => {
                      const st = statusStyle(s.status);
                      return (
                        <tr key={s.id} data-server-id={s.id} data-status={s.status} aria-label={`Server ${s.name}`} className="border-t border-slate-100 align-top">
                          <td className="px-3 py-2">
                            <div className="font-medium">{s.name}</div>
                            <div className="text-xs text-slate-500">
                              {s.address}
                              {s.probeTarget ? `:${s.probeTarget}` : ""}
                            </div>
                          </td>
                          <td data-label="Status" className="px-3 py-2">
                            <span data-testid="health-status" title={s.reason ?? undefined} className={`inline-flex items-center gap-1.5 rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset ${st.badge}`}>
                              <span className={`h-2 w-2 rounded-full ${st.dot}`} aria-hidden />
                              {s.label}
                            </span>
                            <div className="mt-1 text-xs text-slate-500">since {ago(s.since, now)}</div>
                            {s.reason && <div className="mt-1 max-w-xs text-xs text-slate-600">{s.reason}</div>}
                            {s.enabled && <Heartbeat heartbeat={s.heartbeat} />}
                          </td>
                          <td data-label="Last report" className="px-3 py-2 text-xs">
                            {s.report ? (
                              <>
                                <div>{ago(s.report.at, now)}</div>
                                <div className={s.report.listenerAlive ? "text-slate-600" : "text-red-700"}>
                                  listener {s.report.listenerAlive ? "up" : "down"}, service {s.report.serviceRunning ? "running" : "stopped"}
                                </div>
                                <div className="text-slate-600">
                                  {s.report.usersOnline} users · ↓{formatBps(s.report.rxBps)} ↑{formatBps(s.report.txBps)}
                                </div>
                                <div className="text-slate-600">
                                  CPU {Math.round(s.report.cpu)} % · memory {Math.round(s.report.memory)} %
                                </div>
                                <BalancingLoad load={s.report.load} now={now} />
                                <LinkCapacity clusterId={clusterId} server={s} report={s.report} now={now} />
                              </>
                            ) : (
                              <span className="text-slate-500">no report yet</span>
                            )}
                            {s.agent && <AgentState agent={s.agent} />}
                          </td>
                          <td data-label="Last probe" className="px-3 py-2 text-xs">
                            {!s.probesEnabled ? (
                              <span className="text-slate-500">probes off</span>
                            ) : s.probe ? (
                              <>
                                <div className={s.probe.ok ? "text-green-700" : "text-red-700"}>
                                  {s.probe.ok ? "passed" : "failed"}
                                  {s.probe.code ? ` · HTTP ${s.probe.code}` : ""}
                                  {s.probe.latencyMs !== null ? ` · ${Math.round(s.probe.latencyMs)} ms` : ""}
                                </div>
                                <div className="text-slate-600">{s.probe.reason}</div>
                                <div className="text-slate-500">{ago(s.probe.at, now)}</div>
                              </>
                            ) : (
                              <span className="text-slate-500">not probed yet</span>
                            )}
                          </td>
                          <td data-label="Failure streak" className="px-3 py-2 text-xs" data-testid="fail-streak">
                            {s.failStreak}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            </section>
            <HistoryCharts clusterId={clusterId} servers={data.servers} />
            <MeshGrid servers={data.servers} mesh={data.mesh} />
            <ReportedUsage clusterId={clusterId} quarantine={data.quarantine} />
            <section aria-labelledby="probe-settings" className="grid gap-6 lg:grid-cols-2 [&>*]:min-w-0">
              <div>
                <h2 id="probe-settings" className="mb-3 text-lg font-semibold">
                  Health probe
                </h2>
                <ProbeConfigEditor clusterId={clusterId} config={data.cluster.probeConfig} />
              </div>
              <div>
                <h2 className="mb-3 text-lg font-semibold">Agent reports</h2>
                <ReportIntervalEditor clusterId={clusterId} seconds={data.cluster.reportIntervalS} />
              </div>
            </section>
            {/* Full width: seven columns of inputs do not fit half the page without clipping Save. */}
            <ProbeOverrides clusterId={clusterId} servers={data.servers} />
          </>
        )}
      </main>
    </div>
  );
}

/** What the agent says about its core: the config it runs, why it refused the newest, what it cannot serve. */
function AgentState({ agent }: { agent: NonNullable<HealthServer["agent"]> }) {
  return (
    <div className="mt-1 space-y-1" data-testid="agent-state">
      {(agent.core || agent.agentVersion) && (
        <div className="text-slate-500">
          {agent.core ? `${agent.core.kind} ${agent.core.version ?? ""}`.trim() : ""}
          {agent.agentVersion ? ` · agent ${agent.agentVersion}` : ""}
        </div>
      )}
      {agent.configError && (
        <div role="alert" className="max-w-xs rounded bg-red-50 px-2 py-1 text-red-800 ring-1 ring-inset ring-red-600/20" data-testid="config-error">
          <div className="font-medium">The core refused the newest config; it keeps running the previous one.</div>
          <div className="whitespace-pre-wrap break-words font-mono">{agent.configError}</div>
        </div>
      )}
      {agent.unservedInbounds.length > 0 && (
        <div className="max-w-xs rounded bg-amber-50 px-2 py-1 text-amber-900 ring-1 ring-inset ring-amber-600/20" data-testid="unserved-inbounds">
          <div className="font-medium">Not served (handed to no subscriber):</div>
          <ul>
            {agent.unservedInbounds.map((u) => (
              <li key={u.inboundId}>
                {u.name ?? u.inboundId}: {u.reason}
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
