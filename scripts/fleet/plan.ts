/**
 * What the fleet runs: the servers as the app knows them (id, agent token, ports).
 * A plan comes from enrolment through the app (fleet/enrol.ts), from a file
 * (`--plan plan.json`), or is generated locally (`--local`: servers the app does not know).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { z } from "zod";

const port = z.int().min(0).max(65535);

export const fleetPlanServerSchema = z
  .object({
    serverId: z.uuid(),
    name: z.string().min(1).max(200),
    token: z.string().min(1).max(1000),
    inboundPorts: z.array(port).min(1).max(64),
    healthPort: port,
    /** Optional per-server link capacity (bits/s). */
    capacityBps: z.number().positive().optional(),
  })
  .strict();

export const fleetPlanSchema = z
  .object({ servers: z.array(fleetPlanServerSchema).max(1000) })
  .superRefine((plan, ctx) => {
    const ids = new Set<string>();
    const ports = new Set<number>();
    plan.servers.forEach((s, i) => {
      if (ids.has(s.serverId)) ctx.addIssue({ code: "custom", path: ["servers", i, "serverId"], message: "duplicate serverId" });
      ids.add(s.serverId);
      for (const p of [...s.inboundPorts, s.healthPort]) {
        if (p === 0) continue;
        if (ports.has(p)) ctx.addIssue({ code: "custom", path: ["servers", i], message: `port ${p} used twice` });
        ports.add(p);
      }
    });
  });

export type FleetPlanServer = z.infer<typeof fleetPlanServerSchema>;
export type FleetPlan = z.infer<typeof fleetPlanSchema>;

export async function loadPlan(file: string): Promise<FleetPlan> {
  const raw = JSON.parse(await readFile(file, "utf8")) as unknown;
  return fleetPlanSchema.parse(raw);
}

/**
 * A local plan with fresh ids and tokens that no app knows, so the app answers its reports
 * with 401 (enrol through the app, fleet/enrol.ts, for servers it accepts). Server i uses
 * inbound port basePort + 2i and health port basePort + 2i + 1; basePort 0 = ephemeral ports.
 */
export function generateLocalPlan(count: number, basePort: number): FleetPlan {
  return {
    servers: Array.from({ length: count }, (_, i) => ({
      serverId: randomUUID(),
      name: `sim-${String(i + 1).padStart(2, "0")}`,
      token: randomBytes(24).toString("base64url"),
      inboundPorts: [basePort === 0 ? 0 : basePort + 2 * i],
      healthPort: basePort === 0 ? 0 : basePort + 2 * i + 1,
    })),
  };
}
