/**
 * npm run bench:pure — figures, not assertions: the real-time goals of pure code that tests
 * used to assert with a wall clock (a busy machine made them fail). Each is timed over
 * repeated runs and printed next to its goal.
 *  - the diagram layout of 100 servers / 400 inbounds / 40 routes: goal < 50 ms;
 *  - refusing a 10,000-character name 100 times: goal < 500 ms (the length is checked first).
 */
import { layoutTopology, type LayoutInput } from "@/components/diagram/layout";
import { nameSchema } from "@/core/validation";

function synthetic(servers: number, inbounds: number, routes: number): LayoutInput {
  return {
    servers: Array.from({ length: servers }, (_, i) => ({ id: `s${i}` })),
    routes: Array.from({ length: routes }, (_, i) => ({ id: `r${i}` })),
    inbounds: Array.from({ length: inbounds }, (_, i) => ({ id: `i${i}`, serverId: `s${i % servers}`, routeId: i % 10 !== 0 ? `r${(i * 7) % routes}` : null })),
  };
}

/** Median and worst of `runs` timings of `fn`, after one warm-up run. */
function time(runs: number, fn: () => void): { medianMs: number; worstMs: number } {
  fn();
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { medianMs: ms[Math.floor(runs / 2)]!, worstMs: ms[runs - 1]! };
}

const input = synthetic(100, 400, 40);
const layout = time(20, () => layoutTopology(input));
console.log(`diagram layout, 100 servers / 400 inbounds / 40 routes: median ${layout.medianMs.toFixed(1)} ms, worst ${layout.worstMs.toFixed(1)} ms (goal < 50 ms)`);
const long = "x".repeat(10_000);
const refusals = time(20, () => {
  for (let i = 0; i < 100; i++) if (nameSchema.safeParse(long).success) throw new Error("a 10,000-character name was accepted");
});
console.log(`100 refusals of a 10,000-character name: median ${refusals.medianMs.toFixed(1)} ms, worst ${refusals.worstMs.toFixed(1)} ms (goal < 500 ms)`);
