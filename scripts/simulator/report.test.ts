import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseScenarioText, type SimulationOutput } from "./index";
import type { PolicyResult } from "./engine";
import { aimsMet, renderTable } from "./report";

const result = (p: Partial<PolicyResult> = {}): PolicyResult => ({
  jain: 0.9,
  p5Satisfaction: 0.5,
  overloadShare: 0.1,
  churn: 0.01,
  onDownUserSeconds: 0,
  decisionsPerSecond: 1000,
  ...p,
});
const output = (rb: Partial<PolicyResult>, others: Partial<PolicyResult> = {}): SimulationOutput => ({
  scenario: "s",
  results: { routeboard: result(rb), random: result({ jain: 0.5, ...others }), cyclic: result({ jain: 0.5 }), fewestUsers: result({ jain: 0.5 }), oracle: result({ jain: 0.92 }) },
});

describe("aims", () => {
  it("passes a result within every aim", () => {
    expect(aimsMet(output({ jain: 0.9, churn: 0.05 })).misses).toEqual([]);
  });
  it("names each aim missed", () => {
    const { misses } = aimsMet(output({ jain: 0.6, churn: 0.2, onDownUserSeconds: 5 }, { jain: 0.7 }));
    expect(misses).toEqual([
      "churn 0.2 > 0.05",
      "jain 0.652 × oracle < 0.95",
      "jain below random (0.7 > 0.6)",
      "5 user-seconds on a known-down server",
    ]);
  });
  it("renders one row per policy, the scenario named once", () => {
    const table = renderTable([output({})]).split("\n");
    expect(table).toHaveLength(2 + 5);
    expect(table[2]).toMatch(/^\| s \| \*\*routeboard\*\* \| 0.9 \| 0.978 \|/);
    expect(table[3]).toMatch(/^\| {2}\| random \|/);
  });
});

describe("scenario fixtures", () => {
  const dir = path.join(import.meta.dirname, "scenarios");
  const files = readdirSync(dir).filter((f) => f.endsWith(".json"));
  it("includes a flash crowd, rolling outages, cooling peaks and a capacity-skewed fleet", () => {
    expect(files.sort()).toEqual(["capacity-skewed.json", "cooling-peaks.json", "flash-crowd.json", "rolling-outages.json"]);
  });
  it.each(files)("%s is a valid scenario named after its file", (f) => {
    const sc = parseScenarioText(readFileSync(path.join(dir, f), "utf8"));
    expect(`${sc.name}.json`).toBe(f);
  });
});
