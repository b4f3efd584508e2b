import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { z } from "zod";
import { agentReportSchema } from "@/core/agent-wire";
import { probeConfigSchema } from "@/core/monitoring-contract";
import { repairKnownRefinements } from "./hints";
import { broken, wellFormed } from "./zod-arbitrary";

const ids = { uuids: ["6f1c6c1e-6c2a-4d8e-9d8c-0a1b2c3d4e5f"] };

describe("zod → fast-check", () => {
  it.each([
    ["agent report", agentReportSchema],
    ["probe config", probeConfigSchema],
    ["bounded object", z.object({ id: z.uuid(), n: z.int().min(3).max(9), s: z.string().min(2).max(5), e: z.enum(["a", "b"]), l: z.array(z.boolean()).max(2), o: z.number().nullable().optional(), d: z.string().default("x") })],
  ])("well-formed %s values are (almost always) accepted", (_name, schema) => {
    const values = fc.sample(wellFormed(schema, ids).map((v) => repairKnownRefinements(v)), 300);
    const ok = values.filter((v) => schema.safeParse(v).success).length;
    // Refinements the converter cannot see are repaired by hints.ts; a few may still refuse.
    expect(ok / values.length).toBeGreaterThan(0.9);
  });

  it("broken values are mostly refused", () => {
    const schema = z.object({ id: z.uuid(), n: z.int().min(3).max(9), s: z.string().min(2).max(5) });
    const values = fc.sample(broken(schema, ids), 300);
    const refused = values.filter((v) => !schema.safeParse(v).success).length;
    expect(refused / values.length).toBeGreaterThan(0.6);
  });
});
