/** Simulator entry: play one scenario with every policy and score them side by side. */
import { buildWorkload, runPolicy, type PolicyResult } from "./engine";
import { ABLATION_NAMES, ABLATIONS, type Ablation, type AblationName } from "./ablations";
import { makePolicy, POLICY_NAMES, routeboardPolicy, type PolicyName } from "./policies";
import type { Scenario } from "./scenario";

export { parseScenario, parseScenarioText, ScenarioError, ScenarioSchema, type Scenario } from "./scenario";
export type { PolicyResult } from "./engine";
export { POLICY_NAMES, type PolicyName } from "./policies";

export interface SimulationOutput {
  scenario: string;
  results: Record<PolicyName, PolicyResult>;
  /** A reading, not a policy of the table: routeboard with every link's capacity set (SimulateOptions.linksSet). */
  linksSet?: PolicyResult;
  /** Readings, not policies of the table: routeboard with one move rule off each (SimulateOptions.ablations). */
  ablations?: Record<AblationName, PolicyResult>;
}

export interface SimulateOptions {
  /** Wall clock for decisionsPerSecond (ms). Defaults to performance.now. */
  now?: () => number;
  policies?: readonly PolicyName[];
  /** Also play routeboard with every server's link capacity set, as an operator enters it. */
  linksSet?: boolean;
  /** Also play routeboard once per ablation (ablations.ts): one move rule off each. */
  ablations?: boolean;
}

export function simulate(sc: Scenario, opts: SimulateOptions = {}): SimulationOutput {
  const now = opts.now ?? (() => performance.now());
  const wl = buildWorkload(sc);
  const results = {} as Record<PolicyName, PolicyResult>;
  for (const name of opts.policies ?? POLICY_NAMES) results[name] = runPolicy(sc, wl, makePolicy(name, sc), now);
  const out: SimulationOutput = { scenario: sc.name, results };
  if (opts.linksSet) out.linksSet = runPolicy(sc, wl, routeboardPolicy(sc, undefined, { linksSet: true }), now);
  if (opts.ablations) {
    const ablations = {} as Record<AblationName, PolicyResult>;
    for (const name of ABLATION_NAMES) {
      const a: Ablation = ABLATIONS[name];
      // The workload is drawn from the seed alone, so a changed route setting plays the same users.
      const played = a.scenario ? a.scenario(sc) : sc;
      ablations[name] = runPolicy(played, wl, routeboardPolicy(played, a.options), now);
    }
    out.ablations = ablations;
  }
  return out;
}
