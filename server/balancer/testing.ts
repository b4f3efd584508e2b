/** Test helpers shared by the balancer's unit tests (not used in production code). */
import type { RouteInput, ServerMetrics } from "./types";

export function srv(p: Partial<ServerMetrics> = {}): ServerMetrics {
  return {
    enabled: true,
    available: true,
    coefficient: 1,
    capacityOverrideBps: null,
    learnedPeakBps: 0,
    reportedUsers: 0,
    reportedTrafficBps: 0,
    reportedAt: 0,
    ...p,
  };
}

export function route(
  ids: string[],
  p: Partial<RouteInput> = {},
  fallbackIds: string[] = [],
): RouteInput {
  return {
    routeId: "r1",
    algorithm: "least-traffic",
    inbounds: [
      ...ids.map((s) => ({ inboundId: `in-${s}`, serverId: s, isFallback: false })),
      ...fallbackIds.map((s) => ({ inboundId: `in-${s}`, serverId: s, isFallback: true })),
    ],
    ...p,
  };
}

export const MBIT = 1_000_000;
