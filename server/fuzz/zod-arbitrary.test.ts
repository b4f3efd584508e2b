import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { z } from "zod";
import { agentReportSchema } from "@/core/agent-wire";
import { probeConfigSchema } from "@/core/monitoring-contract";
import { findBadText } from "@/core/text-safety";
import { repairKnownRefinements } from "./hints";
import { broken, wellFormed } from "./zod-arbitrary";

const ids = { uuids: ["6f1c6c1e-6c2a-4d8e-9d8c-0a1b2c3d4e5f"] };

describe("zod → fast-check", () => {
  it.each([
    ["agent report", agentReportSchema],
    ["probe config", probeConfigSchema],
    ["bounded object", z.object({ id: z.uuid(), n: z.int().min(3).max(9), s: z.string().min(2).max(5), e: z.enum(["a", "b"]), l: z.array(z.boolean()).max(2), o: z.number().nullable().optional(), d: z.string().default("x") })],
  ])("well-formed %s values are (almost always) accepted", (_name, schema) => {
    // Values spoiled with NUL or a lone surrogate are meant to be refused (by the API, not by zod).
    const values = fc.sample(wellFormed(schema, ids).map((v) => repairKnownRefinements(v)), 300).filter((v) => findBadText(v) === null);
    const ok = values.filter((v) => schema.safeParse(v).success).length;
    // Refinements the converter cannot see are repaired by hints.ts; a few may still refuse.
    expect(ok / values.length).toBeGreaterThan(0.9);
  });

  it("every string field sometimes holds a NUL byte or a lone surrogate (issue 21, point 7)", () => {
    const schema = z.object({ a: z.string().max(20), b: z.uuid(), c: z.array(z.string().regex(/^[a-z]+$/)).min(1).max(2), d: z.string().optional() });
    const values = fc.sample(wellFormed(schema, ids), 2000) as Array<Record<string, unknown>>;
    for (const field of ["a", "b", "c", "d"]) {
      const spoiled = values.filter((v) => findBadText({ [field]: v[field] }) !== null).length;
      expect(spoiled, field).toBeGreaterThan(20);
      expect(spoiled, field).toBeLessThan(400);
    }
    const kinds = new Set(values.map((v) => findBadText(v)?.reason).filter(Boolean));
    expect([...kinds].sort()).toEqual(["contains a NUL byte (U+0000)", "contains a lone surrogate (not a Unicode character)"]);
  });

  it("broken values are mostly refused", () => {
    const schema = z.object({ id: z.uuid(), n: z.int().min(3).max(9), s: z.string().min(2).max(5) });
    const values = fc.sample(broken(schema, ids), 300);
    const refused = values.filter((v) => !schema.safeParse(v).success).length;
    expect(refused / values.length).toBeGreaterThan(0.6);
  });
});
