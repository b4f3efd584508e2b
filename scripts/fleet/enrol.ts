/**
 * Fleet enrolment through the app (tRPC): `monitoring.enrolFleet` creates or reuses sim-NN
 * servers on 127.0.0.1 and returns their plan; `monitoring.rotateAgentTokens` takes over an
 * existing cluster. `followAssignments` keeps each sim server's users equal to the
 * subscribers the balancer assigned to it.
 */
import type { AppClient } from "./app-client";
import type { Fleet } from "./fleet";
import { fleetPlanSchema, type FleetPlan } from "./plan";

export interface EnrolResult {
  clusterId: string;
  clusterName: string;
  reportIntervalS: number;
  plan: FleetPlan;
}

export async function enrolFleet(
  app: AppClient,
  opts: { servers: number; clusterId?: string; clusterName?: string; inboundsPerServer?: number },
): Promise<EnrolResult> {
  const r = await app.mutation<EnrolResult>("monitoring.enrolFleet", opts);
  return { ...r, plan: fleetPlanSchema.parse(r.plan) };
}

export async function takeOverCluster(app: AppClient, clusterId: string): Promise<EnrolResult> {
  const r = await app.mutation<EnrolResult>("monitoring.rotateAgentTokens", { clusterId });
  return { ...r, plan: fleetPlanSchema.parse(r.plan) };
}

export interface AssignmentFollower {
  /** One poll now (also used by tests). */
  poll(): Promise<void>;
  stop(): void;
}

/** Polls monitoring.assignmentCounts every `everyMs` and sets each sim server's users. */
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
    const counts = await app.query<Record<string, number>>("monitoring.assignmentCounts", { clusterId });
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
