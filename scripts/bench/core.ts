/**
 * Core benchmark: decisions per second of the Balancer facade on a synthetic fleet.
 * Not part of the pure core (it reads a wall clock, injectable for tests).
 */
import { mulberry32 } from "@/scripts/simulator/prng";
import { Balancer } from "@/server/balancer/index";
import type { RouteInput, ServerMetrics } from "@/server/balancer/types";

export interface BenchOptions {
  servers?: number;
  routes?: number;
  inboundsPerRoute?: number;
  /** Subscribers to decide for; each gets one decision per route. */
  subscribers?: number;
  seed?: number;
  /** Per-candidate notes, as the dashboard wants them (default false: the subscription hot path). */
  explain?: boolean;
  now?: () => number;
}

export interface BenchResult {
  decisionsPerSecond: number;
  decisions: number;
  elapsedMs: number;
  servers: number;
  routes: number;
  inboundsPerRoute: number;
  subscribers: number;
  explain: boolean;
}

export function benchCore(opts: BenchOptions = {}): BenchResult {
  const nServers = opts.servers ?? 500;
  const nRoutes = opts.routes ?? 100;
  const perRoute = opts.inboundsPerRoute ?? 20;
  const subscribers = opts.subscribers ?? 3000;
  const now = opts.now ?? (() => performance.now());
  const r = mulberry32(opts.seed ?? 1);
  const nowMs = 1_700_000_000_000;

  const servers = new Map<string, ServerMetrics>();
  for (let i = 0; i < nServers; i++) {
    const cap = (r() < 0.2 ? 10_000 : 1_000) * 1e6;
    const users = Math.floor(r() * 400);
    servers.set(`s${i}`, {
      enabled: r() > 0.02,
      available: r() > 0.05,
      coefficient: r() < 0.1 ? 2 : 1,
      capacityOverrideBps: r() < 0.1 ? cap : null,
      learnedPeakBps: cap * (0.5 + r() * 0.5),
      reportedUsers: users,
      reportedTrafficBps: users * 3e6 * r(),
      reportedAt: nowMs - Math.floor(r() * 300_000),
    });
  }
  const routes: RouteInput[] = [];
  for (let k = 0; k < nRoutes; k++) {
    routes.push({
      routeId: `r${k}`,
      algorithm: k % 4 === 0 ? "round-robin" : "least-traffic",
      inbounds: Array.from({ length: perRoute }, (_, j) => ({
        inboundId: `r${k}-i${j}`,
        serverId: `s${(k * perRoute + j) % nServers}`,
        isFallback: j === perRoute - 1,
      })),
    });
  }
  const balancer = new Balancer();
  // Half of the subscribers already have assignments (refreshes), half are new.
  const prevs: Map<string, string>[] = [];
  for (let u = 0; u < subscribers; u++) {
    const m = new Map<string, string>();
    if (u % 2 === 0) for (const rt of routes) m.set(rt.routeId, rt.inbounds[u % perRoute]?.inboundId as string);
    prevs.push(m);
  }
  // warm-up
  for (let u = 0; u < Math.min(200, subscribers); u++) {
    balancer.decideForSubscriber({ userId: `w${u}`, routes, servers, previousAssignments: prevs[u] as Map<string, string>, nowMs });
  }
  balancer.inflight.clear();
  let decisions = 0;
  const t0 = now();
  for (let u = 0; u < subscribers; u++) {
    const out = balancer.decideForSubscriber({
      userId: `user-${u}`,
      routes,
      servers,
      previousAssignments: prevs[u] as Map<string, string>,
      nowMs: nowMs + u,
      explain: opts.explain ?? false,
    });
    decisions += out.length;
  }
  const elapsedMs = Math.max(now() - t0, 1e-6);
  return {
    decisionsPerSecond: Math.round(decisions / (elapsedMs / 1000)),
    decisions,
    elapsedMs: Math.round(elapsedMs),
    servers: nServers,
    routes: nRoutes,
    inboundsPerRoute: perRoute,
    subscribers,
    explain: opts.explain ?? false,
  };
}
