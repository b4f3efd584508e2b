/**
 * Fleet enrolment through the app (tRPC): `tooling.enrolFleet` creates or reuses sim-NN
 * servers on 127.0.0.1 and returns their plan; `tooling.rotateAgentTokens` takes over an
 * existing cluster. `followAssignments` keeps each sim server's users equal to the
 * subscribers the balancer assigned to it.
 */
import { TrpcCallError, type AppClient } from "../harness/trpc";
import type { Fleet } from "@/server/demo/fleet";
import { fleetPlanSchema, type FleetPlan } from "./plan";

export interface EnrolResult {
  clusterId: string;
  clusterName: string;
  reportIntervalS: number;
  plan: FleetPlan;
}

/** tooling.* is mounted only with ROUTEBOARD_DEVTOOLS=1: say so instead of a bare 404. */
async function withDevtools<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof TrpcCallError && err.status === 404) {
      throw new Error(`${err.message}: start the app with ROUTEBOARD_DEVTOOLS=1 to use the fleet tooling`, { cause: err });
    }
    throw err;
  }
}

export async function enrolFleet(
  app: AppClient,
  opts: { servers: number; clusterId?: string; clusterName?: string; inboundsPerServer?: number },
): Promise<EnrolResult> {
  const r = await withDevtools(() => app.mutation<EnrolResult>("tooling.enrolFleet", opts));
  return { ...r, plan: fleetPlanSchema.parse(r.plan) };
}

export async function takeOverCluster(app: AppClient, clusterId: string): Promise<EnrolResult> {
  const r = await withDevtools(() => app.mutation<EnrolResult>("tooling.rotateAgentTokens", { clusterId }));
  return { ...r, plan: fleetPlanSchema.parse(r.plan) };
}

export interface AssignmentFollower {
  /** One poll now (also used by tests). */
  poll(): Promise<void>;
  stop(): void;
}

/** Polls tooling.assignmentCounts every `everyMs` and sets each sim server's users. */
export function followAssignments(
  app: AppClient,
  clusterId: string,
  fleet: Fleet,
  everyMs = 3000,
  onError: (err: unknown) => void = () => {},
): AssignmentFollower {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const poll = async () => {
    const counts = await app.query<Record<string, number>>("tooling.assignmentCounts", { clusterId });
    for (const [id, sim] of fleet.servers) sim.setUsers(counts[id] ?? 0);
  };
  const loop = async () => {
    if (stopped) return;
    try {
      await poll();
    } catch (err) {
      onError(err);
    }
    if (!stopped) timer = setTimeout(() => void loop(), everyMs);
  };
  void loop();
  return {
    poll,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
