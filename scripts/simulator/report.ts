/**
 * The simulator's side-by-side table (npm run simulate -- --all) and the balancer's aims
 * (issue: churn ≤ 0.05, fairness ≥ 0.95 × the oracle's and above every baseline, no
 * user-second on a server known to be down).
 */
import type { SimulationOutput } from "./index";
import { POLICY_NAMES } from "./policies";

export const AIMS = { maxChurn: 0.05, minJainVsOracle: 0.95 } as const;
const BASELINES = ["random", "cyclic", "fewestUsers"] as const;

export function aimsMet(o: SimulationOutput): { misses: string[] } {
  const rb = o.results.routeboard;
  const oracle = o.results.oracle;
  const misses: string[] = [];
  if (rb.churn > AIMS.maxChurn) misses.push(`churn ${rb.churn} > ${AIMS.maxChurn}`);
  const ratio = oracle.jain > 0 ? rb.jain / oracle.jain : 1;
  if (ratio < AIMS.minJainVsOracle) misses.push(`jain ${ratio.toFixed(3)} × oracle < ${AIMS.minJainVsOracle}`);
  for (const b of BASELINES) if (o.results[b].jain > rb.jain) misses.push(`jain below ${b} (${o.results[b].jain} > ${rb.jain})`);
  if (rb.onDownUserSeconds > 0) misses.push(`${rb.onDownUserSeconds} user-seconds on a known-down server`);
  return { misses };
}

export function renderTable(outputs: readonly SimulationOutput[]): string {
  const lines = [
    "| scenario | policy | jain | × oracle | p5 satisfaction | overload share | churn | on-down user-seconds |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const o of outputs) {
    const oracleJain = o.results.oracle.jain;
    POLICY_NAMES.forEach((p, i) => {
      const r = o.results[p];
      const name = p === "routeboard" ? "**routeboard**" : p;
      const ratio = oracleJain > 0 ? (r.jain / oracleJain).toFixed(3) : "–";
      lines.push(`| ${i === 0 ? o.scenario : ""} | ${name} | ${r.jain} | ${ratio} | ${r.p5Satisfaction} | ${r.overloadShare} | ${r.churn} | ${r.onDownUserSeconds} |`);
    });
  }
  return lines.join("\n");
}
