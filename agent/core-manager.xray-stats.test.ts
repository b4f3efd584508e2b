/**
 * Stats at scale on the Xray stand-in (testdata/fake-xray.mjs), which keeps counters as the real
 * core does (never removed, read and reset by substring pattern) and fails a reply over the API
 * client's 4 MiB limit as grpc-go does: 200,000 counters (98,000 users, 2,000 of them replaced
 * live, whose counters stay) are read in chunks, each counter exactly once; a chunk that fails is
 * retried, one that keeps failing loses nothing of the others and keeps its
 * counters for the next reading.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import type { AgentUser } from "../core/agent-wire";
import { CoreManager, run } from "./core-manager";
import { waitFor } from "./fake-panel";
import { memoryLog } from "./log";
import { parseXrayStats, planStatsChunks } from "./stats";
import { addTraffic, agentConfig, FAKE_XRAY, FAKE_XRAY_BINS, fakeXrayDir, IDS, inbound, randomPort } from "./test-support";

const { dir, logFile, calls } = fakeXrayDir("rb-agent-xray-stats-");
const faultsFile = path.join(dir, "faults.json");
const log = memoryLog();
const core = new CoreManager({ bins: FAKE_XRAY_BINS, stateDir: dir, apiPort: randomPort(), log });
afterAll(async () => {
  await core.stop();
  delete process.env.FAKE_XRAY_LOG;
  delete process.env.FAKE_XRAY_FAULTS;
  fs.rmSync(dir, { recursive: true, force: true });
});
/** Users whose bytes differ from what was expected (undefined: not read at all); one expect instead of 100,000. */
function mismatches(got: Map<string, { up: number; down: number }>, want: (email: string) => { up: number; down: number } | undefined): string[] {
  const out: string[] = [];
  for (const email of emails) {
    const [g, w] = [got.get(email), want(email)];
    if (g?.up !== w?.up || g?.down !== w?.down) out.push(`${email}: got ${JSON.stringify(g)}, want ${JSON.stringify(w)}`);
  }
  return out.slice(0, 5);
}
let emails: string[] = [];

// Node starting the stand-in's CLI once per query is most of its CPU; a loaded machine needs minutes.
it("reads 200,000 counters in chunks, each once, and keeps every other chunk's bytes when one fails", { timeout: 120_000 }, async () => {
  process.env.FAKE_XRAY_LOG = logFile;
  process.env.FAKE_XRAY_FAULTS = faultsFile;
  const users: AgentUser[] = Array.from({ length: 100_000 }, () => ({ id: randomUUID(), email: randomUUID() }));
  // Each user's traffic is unique, so a counter read twice or skipped would show.
  emails = users.map((u) => u.email);
  const expected = new Map(users.map((u, k) => [u.email, { up: k + 1, down: 2 * k + 1 }]));
  const rows = (list: AgentUser[]) => list.map((u): [string, number, number] => [u.email, expected.get(u.email)!.up, expected.get(u.email)!.down]);

  const none = inbound({ id: IDS.inNone, port: randomPort(), security: "none" });
  const v1 = agentConfig({ version: "s1", inbounds: [none], users: users.slice(0, 98_000) });
  expect(await core.apply(v1)).toBe(true);
  await waitFor("the core to run", () => calls().some((c) => c.startsWith("run ")));
  expect(await addTraffic(core.apiPort!, rows(users.slice(0, 98_000)))).toBe(98_000);

  // 2,000 users replaced live: the core drops them but keeps their counters (and unread bytes).
  expect(await core.apply({ ...v1, version: "s2", users: users.slice(2_000) })).toBe(true);
  expect(log.lines).toContain("info: users updated live through Xray's API (config s2: 2000 added, 2000 removed)");
  expect(calls().filter((c) => c.startsWith("rmu ")).length).toBe(2); // 1,000 emails per command line
  expect(await addTraffic(core.apiPort!, rows(users.slice(98_000)))).toBe(2_000);
  expect(await addTraffic(core.apiPort!, [[users[0]!.email, 1, 1]])).toBe(0);

  // 200,000 counters: one query for all would be refused by the client (as with the real core).
  const server = `--server=127.0.0.1:${core.apiPort}`;
  const whole = await run(FAKE_XRAY, ["api", "statsquery", server, "-pattern", "user>>>"], 10_000);
  expect(whole.code).toBe(1);
  expect(whole.stderr).toMatch(/^failed to query stats: rpc error: code = ResourceExhausted desc = grpc: received message larger than max \(\d+ vs\. 4194304\)$/m);

  // The agent's chunks: one fails twice then answers, one keeps failing.
  const chunks = planStatsChunks(emails);
  expect(chunks.length).toBeGreaterThanOrEqual(14);
  const [flaky, broken] = [chunks[0]!, chunks[1]!];
  fs.writeFileSync(faultsFile, JSON.stringify({ [flaky.pattern]: 2, [broken.pattern]: 99 }));
  const brokenEmails = new Set(emails.filter((e) => `user>>>${e}>>>`.includes(broken.pattern)));
  expect(brokenEmails.size).toBe(broken.users);

  const queriesBefore = calls().filter((c) => c.startsWith("statsquery ")).length;
  const first = await core.readTraffic();
  expect(first.size).toBe(100_000 - brokenEmails.size);
  expect(mismatches(first, (email) => (brokenEmails.has(email) ? undefined : expected.get(email)))).toEqual([]);
  expect(calls().filter((c) => c.startsWith("statsquery ")).length - queriesBefore).toBe(chunks.length + 2 + 2);
  expect(log.lines.filter((l) => l.startsWith(`warn: reading the counters of ${flaky.covers} failed`))).toHaveLength(2);
  expect(log.lines.filter((l) => l.startsWith("error: "))).toEqual([
    `error: reading traffic counters: 1 of ${chunks.length} queries failed 3 times, covering ${broken.users} users: ${broken.covers} (failed to query stats: rpc error: code = Unavailable desc = injected by the test). ` +
      "The other queries' traffic is kept; counters the core did not reset are read next time.",
  ]);

  // The failing chunk's counters were not reset: the next reading (same plan) gets its bytes.
  fs.writeFileSync(faultsFile, "{}");
  const left = await run(FAKE_XRAY, ["api", "statsquery", server, "-pattern", broken.pattern], 10_000);
  expect(mismatches(parseXrayStats(left.stdout), (email) => (brokenEmails.has(email) ? expected.get(email) : undefined))).toEqual([]);
});
