import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";
import { availableParallelism } from "node:os";
import LongestFirstSequencer from "./scripts/vitest-sequencer";

/**
 * `npm test` runs vitest as two processes side by side (VITEST_PART=1 and 2, two workers each):
 * three of the four fuzz shards with the agent and scripts files (real v2ray, apps of their
 * own), and the last shard with the rest, about half the work each (with every shard in part 1
 * it ran a minute after part 2 had finished, on two workers of four). Most files wait on a
 * database, a socket or a child process, so four workers on 2 cores finish far sooner than
 * two; one pool of four once hung with a worker that never started its file, which two pools
 * of vitest's default size have not done.
 */
const part = process.env.VITEST_PART;
if (part !== undefined && part !== "1" && part !== "2") throw new Error(`VITEST_PART must be 1 or 2, not ${JSON.stringify(part)}`);
const PART_ONE = ["server/fuzz/api.fuzz.{1,2,3}.test.ts", "server/fuzz/zod-arbitrary.test.ts", "agent/**/*.test.ts", "scripts/**/*.test.ts"];

export default defineConfig({
  resolve: {
    alias: {
      "@": fileURLToPath(new URL(".", import.meta.url)),
      // Next and tsx (through tsconfig paths) load the no-op entry on the server; so do tests.
      "server-only": fileURLToPath(new URL("./node_modules/server-only/empty.js", import.meta.url)),
    },
  },
  test: {
    include: part === "1" ? PART_ONE : ["{server,db,components,scripts,app,agent,core}/**/*.test.{ts,tsx}"],
    exclude: ["node_modules/**", "e2e/**", ".next/**", ...(part === "2" ? PART_ONE : [])],
    // Vitest's default in a run, one worker less than the cores (at least 2), per process: npm
    // test runs two (VITEST_PART above).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The longest files first, so none of them starts when the rest is done (scripts/vitest-sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    // PGlite is WebAssembly; each test file's worker compiles it anew. V8's optimising tier
    // (TurboFan) recompiles its hot functions, which a file's few hundred queries never pay
    // back: with the baseline compiler only, 24 database-heavy files took 156 s of CPU
    // instead of 234 s, and the fuzz file at FUZZ_RUNS=40 58 s instead of 74 s.
    execArgv: ["--liftoff-only"],
    // Makes the PGlite data folders that test databases are copied from.
    globalSetup: ["db/pglite-template.ts"],
    // Bounds for a hang, not for speed: a machine busy with other work must still pass.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // expect.poll waits on a condition; its default of 1 s failed on a busy machine.
    expect: { poll: { timeout: 30_000 } },
  },
});
