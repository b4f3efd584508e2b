import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Files that run longest, measured on a fresh clone (seconds on one worker, 2 cores): they go
 * first. Vitest orders a run without its cache (every CI run is a fresh clone) by file size,
 * and the fuzz shards are small files that drive a long suite: run last, they kept both
 * workers busy for two minutes after everything else had finished.
 */
const LONGEST_FIRST = [
  "server/fuzz/api.fuzz.", // 57–76 s each
  "agent/agent.test.ts", // 40–58 s
  "server/dataplane/dataplane.test.ts", // 25 s
  "scripts/backup.test.ts", // 21 s
  "server/startup.test.ts", // 20 s
  "scripts/simulator/simulator.test.ts", // 18 s
  "agent/agent.limits.test.ts", // 13 s
  "server/api/routers/accounts.test.ts", // 13 s
];

function rank(spec: TestSpecification): number {
  const k = LONGEST_FIRST.findIndex((prefix) => spec.moduleId.includes(`/${prefix}`));
  return k === -1 ? LONGEST_FIRST.length : k;
}

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: the rest keeps vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
