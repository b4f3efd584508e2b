/**
 * Ablations (`npm run simulate -- --families --ablations`): routeboard played again with one of
 * its move rules turned off through the option an operator or test would set, so what each
 * rule gains is measured on the families as the code stands, not quoted from the round that
 * added it (server/balancer/decide.ts names each rule's gain and cost).
 */
import type { BalancerOptions } from "@/server/balancer/types";
import type { Scenario } from "./scenario";

export interface Ablation {
  /** What is turned off, in decide.ts's numbering. */
  label: string;
  options?: Partial<BalancerOptions>;
  /** The scenario as played without the rule (the route's own settings). */
  scenario?: (sc: Scenario) => Scenario;
}

export const ABLATIONS = {
  evenWhileBlind: { label: "rules 0 and 0b (the even split while blind; evenWhileBlind off)", options: { evenWhileBlind: false } },
  margin: { label: "rule 1's margin (the route's hysteresis 0)", scenario: (sc) => ({ ...sc, route: { ...sc.route, hysteresis: 0 } }) },
  fairShareWhenFull: { label: "rule 1b and rule 1's absolute gain (minMoveGainBps 0)", options: { minMoveGainBps: 0 } },
  keepSatisfied: { label: "rule 3 (keepSatisfied off)", options: { keepSatisfied: false } },
  failBackDwell: { label: "rule 4 (the fail-back dwell; failBackDwellMs 0)", options: { failBackDwellMs: 0 } },
} as const satisfies Record<string, Ablation>;

export type AblationName = keyof typeof ABLATIONS;
export const ABLATION_NAMES = Object.keys(ABLATIONS) as AblationName[];
