/**
 * The fuzz suite (issue 11): every tRPC procedure of the router, with the tooling router
 * mounted, is called over HTTP as the owner with inputs derived from its own zod schema,
 * well-formed and broken; then the agent endpoints and /sub. Procedures are enumerated
 * from the router itself, so procedures added later are fuzzed without touching this file.
 *
 * Invariants: no 5xx, ever; a call refused for bad input (400) names the field; nothing is
 * stored on a refused call (the database snapshot is the same before and after).
 *
 * FUZZ_RUNS cases per procedure (200 in `npm test`, 1,000 in `npm run fuzz`); the totals
 * are printed at the end of each shard.
 *
 * The procedures are dealt round-robin into shards, one test file each (`api.fuzz.N.test.ts`),
 * so the suite's workers share them: as one file it ran for half of vitest's time on one
 * worker while the other had finished everything else.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
export const FUZZ_SHARDS = 4;
import fc from "fast-check";
import superjson from "superjson";
import { sql } from "drizzle-orm";
import { inbounds, operators, routes, servers, subscribers } from "@/db/schema";
import { seedDemoCluster } from "@/server/demo/seed";
import { agentReportSchema } from "@/core/agent-wire";
import { devtoolsAppRouter } from "@/server/api/root";
import { startTestApp, type TestApp } from "@/server/api/http-testing";
import { createApiToken } from "@/server/accounts/api-tokens";
import { newAgentToken } from "@/server/auth/tokens";
import { findBadText } from "@/core/text-safety";
import { repairKnownRefinements } from "./hints";
import { broken, wellFormed, type FuzzIds } from "./zod-arbitrary";

const RUNS = Math.max(1, Number(process.env.FUZZ_RUNS ?? 200));
/** Per-case budget, a hang bound: a few procedures hash passwords or build clusters, and a busy machine stretches them (250 ms timed out one beside the e2e run). */
const CASE_MS = 1000;
/** Accepted writes after which a procedure's run starts again from the template database. */
const RESET_AFTER_WRITES = 50;

interface Procedure {
  _def: { type: "query" | "mutation" | "subscription"; inputs: unknown[] };
}
const procedures = Object.entries((devtoolsAppRouter as unknown as { _def: { procedures: Record<string, Procedure> } })._def.procedures).sort(([a], [b]) => a.localeCompare(b));

/**
 * Well-formed inputs of the tooling procedures are kept small: they build whole clusters
 * (up to 2,000 servers × 20 inbounds) and bind local ports, which would make each case take
 * seconds without exercising anything new. Applied before a broken input is derived too.
 */
const SIZE_LIMITS: Record<string, Record<string, number>> = {
  "tooling.createSynthetic": { servers: 3, inboundsPerServer: 2, routes: 3 },
  "tooling.enrolFleet": { servers: 3, inboundsPerServer: 2 },
};

/**
 * Procedures whose accepted calls are costly by nature run a share of FUZZ_RUNS and go back to
 * the template database sooner. A demo cluster writes a day of history (1,728 rows); about
 * three cases in ten are accepted (many broken inputs too, their extra fields stripped), and
 * each snapshot after them hashes all those rows: at the full count this one procedure took a
 * minute, and timed out on a busy machine. Its input's schema (a name) is the one
 * clusters.create has, fuzzed there at the full count.
 */
const COSTLY: Record<string, { runsShare: number; resetAfterWrites: number }> = {
  "clusters.createDemo": { runsShare: 0.3, resetAfterWrites: 5 },
};

interface Totals {
  procedures: number;
  endpoints: number;
  cases: number;
  refused: number;
  accepted: number;
  failures: number;
  /** Well-formed inputs with a NUL or lone surrogate in a string (each must be a 400). */
  badText: number;
}
const totals: Totals = { procedures: 0, endpoints: 0, cases: 0, refused: 0, accepted: 0, failures: 0, badText: 0 };

interface Answer {
  status: number;
  body: unknown;
  text: string;
}

type ErrorBody = { error?: { json?: { message?: string; data?: { code?: string; fieldErrors?: Record<string, string> | null } } } };

/** Fuzzes shard `shard` (0-based) of FUZZ_SHARDS: its share of procedures, and one endpoint group. */
export function fuzzShard(shard: number): void {
  describe(`fuzz, shard ${shard + 1} of ${FUZZ_SHARDS}`, () => {
    let app: TestApp;
    let cookie: string;
    let ids: FuzzIds;
    let agentToken: string;
    let subToken: string;
    let template: Array<{ table: string; columns: string; rows: unknown[] }>;
    let tables: string[];
    /** Per table (throttles left out, below): the query hashing its rows, and its last hash. */
    const hashSql = new Map<string, string>();
    const tableHash = new Map<string, string>();

    async function exec<T = Record<string, unknown>>(q: string): Promise<T[]> {
      const r = (await app.database.db.execute(sql.raw(q))) as unknown as { rows?: T[] } | T[];
      return Array.isArray(r) ? r : (r.rows ?? []);
    }

    /**
     * Tables written since the log was last read. Every table has a trigger (each row
     * inserted, updated or deleted, and truncates) that names it in `fuzz_touched`, in the
     * writer's own transaction, so a write that rolls back names nothing. Reading the log
     * after each case costs one small query; counting every table's rows to find what moved
     * cost ten times that and was a tenth of a shard.
     */
    async function takeTouched(): Promise<string[]> {
      const rows = await exec<{ t: string }>(`select t from fuzz_touched`);
      if (rows.length === 0) return [];
      await exec(`delete from fuzz_touched`);
      for (const { t } of rows) touchedSinceReset.add(t);
      return rows.map((r) => r.t);
    }
    const touchedSinceReset = new Set<string>();

    /**
     * One hash per table of all its rows. Left out, on purpose: sessions.last_seen_at (a
     * session may be touched by any call) and throttle tables (counting refused attempts is
     * their job). Only the tables named are hashed again (those the log says were written),
     * so a snapshot after a write hashes the few tables it touched, not the whole database
     * (hashing every row was a third of the suite's time).
     */
    async function snapshot(written: Iterable<string>): Promise<string> {
      for (const t of new Set(written)) {
        const q = hashSql.get(t);
        if (!q) continue;
        const [row] = await exec<{ h: string }>(q);
        tableHash.set(t, row!.h);
      }
      return [...tableHash].map(([t, hash]) => `${t}:${hash}`).join(" ");
    }

    /**
     * The next transaction id: it moves only when something writes (reading assigns none),
     * so an unchanged mark proves nothing was stored since the last reset.
     */
    async function writeMark(): Promise<string> {
      const [r] = await exec<{ x: string }>(`select pg_snapshot_xmax(pg_current_snapshot())::text as x`);
      return r!.x;
    }

    let cleanMark = "";
    /** Per table, every row counted (no column or row left out): the marks of the template's state. */
    let fullMarkSql: string;
    let cleanMarks = new Map<string, string>();
    let templateSnapshot = "";
    async function fullMarks(): Promise<Map<string, string>> {
      return new Map((await exec<{ t: string; m: string }>(fullMarkSql)).map((r) => [r.t, r.m]));
    }
    /**
     * Back to the seeded state: each table written since the last reset (the log's, and as a
     * second witness each table whose full mark moved) is emptied and refilled from the
     * template; the others still hold the template's rows. (Truncating every table made new
     * files for each, a sixth of a shard's time on PGlite.)
     */
    async function reset(): Promise<void> {
      // Nothing written since the last reset: the database is still the template.
      if (cleanMark && (await writeMark()) === cleanMark) return;
      await takeTouched();
      const marks = await fullMarks();
      const moved = template.filter(({ table }) => touchedSinceReset.has(table) || marks.get(table) !== cleanMarks.get(table));
      // Foreign keys are checked by triggers: off while the template (consistent) goes back,
      // so a parent table is refilled without touching its children. The log's triggers are
      // off too: a refill is no case's write.
      await exec(`set session_replication_role = replica`);
      try {
        for (const { table, columns, rows } of moved) {
          await exec(`delete from "${table}"`);
          if (rows.length === 0) continue;
          const payload = JSON.stringify(rows).replace(/'/g, "''");
          await exec(`insert into "${table}" (${columns}) select ${columns} from json_populate_recordset(null::"${table}", '${payload}'::json)`);
        }
      } finally {
        await exec(`set session_replication_role = origin`);
      }
      await app.subscriptions.refresh();
      touchedSinceReset.clear();
      await exec(`delete from fuzz_touched`);
      cleanMarks = await fullMarks();
      cleanMark = await writeMark();
      // The refill is checked, not trusted: a table left out would shift every later baseline.
      expect(await snapshot(moved.map((m) => m.table)), "the database after a reset is the template").toBe(templateSnapshot);
    }

    /** The owner stays signed in whatever a case did (auth.logout revokes the session): checked when a case wrote either table. */
    async function keepOwnerSignedIn(written: string[]): Promise<void> {
      if (written.includes("sessions")) await exec(`update sessions set revoked_at = null where revoked_at is not null`);
      if (written.includes("operators")) await exec(`update operators set role = 'owner' where username = 'http-owner' and role <> 'owner'`);
    }

    beforeAll(async () => {
      app = await startTestApp({ devtools: true });
      cookie = await app.cookie("owner");
      const db = app.database.db;
      await seedDemoCluster(db, "Fuzz");
      const agent = newAgentToken();
      agentToken = agent.token;
      const [cluster] = await exec<{ id: string }>(`select id from clusters limit 1`);
      await db.insert(servers).values({ clusterId: cluster!.id, name: "fuzz-agent", address: "127.0.0.1", agentTokenHash: agent.hash });
      await db.insert(operators).values({ username: "fuzz-viewer", passwordHash: "x", role: "viewer" });
      const [owner] = await exec<{ id: string }>(`select id from operators where username = 'http-owner'`);
      await createApiToken(db, { operatorId: owner!.id, username: "http-owner" }, { name: "fuzz-bot", scopes: ["read", "subscribers:write"] });
      const [sub] = await db.select({ token: subscribers.token }).from(subscribers).limit(1);
      subToken = sub!.token;
      const byKind: Record<string, string[]> = {
        cluster: (await exec<{ id: string }>(`select id from clusters`)).map((r) => r.id),
        server: (await db.select({ id: servers.id }).from(servers)).map((r) => r.id),
        inbound: (await db.select({ id: inbounds.id }).from(inbounds)).map((r) => r.id),
        route: (await db.select({ id: routes.id }).from(routes)).map((r) => r.id),
        subscriber: (await db.select({ id: subscribers.id }).from(subscribers)).map((r) => r.id),
        // The owner is left out: a case removing or demoting it would end the run's session.
        operator: (await exec<{ id: string }>(`select id from operators where username <> 'http-owner'`)).map((r) => r.id),
        token: (await exec<{ id: string }>(`select id from api_tokens`)).map((r) => r.id),
      };
      // Realistic ids: a field named like a table (clusterId, orderedRouteIds, peer/observer
      // → servers) gets ids of that table; any other uuid field gets any existing id.
      const kindOf = (field: string) => {
        const f = field.toLowerCase();
        if (/observer|peer|target/.test(f)) return "server";
        return Object.keys(byKind).find((k) => f.includes(k));
      };
      // API token ids are not uuids: only fields named like them (tokenId) get them.
      ids = { uuids: Object.entries(byKind).flatMap(([k, v]) => (k === "token" ? [] : v)), forField: (field) => byKind[kindOf(field) ?? ""] };

      tables = (await exec<{ tablename: string }>(`select tablename from pg_tables where schemaname = 'public' order by tablename`)).map((r) => r.tablename);
      const cols = await exec<{ table_name: string; column_name: string }>(
        `select table_name, column_name from information_schema.columns where table_schema = 'public' order by table_name, ordinal_position`,
      );
      for (const t of tables) {
        // Throttles and rate limits exist to count refused attempts (login_throttle today).
        if (/throttle|attempt|rate_limit/.test(t)) continue;
        const list = cols.filter((c) => c.table_name === t && !(t === "sessions" && c.column_name === "last_seen_at")).map((c) => `"${c.column_name}"`);
        // A report refused as implausible raises its alert on purpose (issue 21): that is no change.
        const where =
          t === "alert_events"
            ? ` where type <> 'server.report_implausible'`
            : t === "alert_deliveries"
              ? ` where event_id not in (select id from alert_events where type = 'server.report_implausible')`
              : "";
        hashSql.set(t, `select md5(coalesce(string_agg(h, ',' order by h), '')) as h from (select md5(row_to_json(r)::text) as h from (select ${list.join(", ")} from "${t}"${where}) r) s`);
      }
      fullMarkSql = tables.map((t) => `select '${t}' as t, count(*)::text || ':' || coalesce(max(xmin::text::bigint), 0)::text as m from "${t}"`).join(" union all ");
      template = [];
      for (const t of tables) {
        // Generated columns (subscribers.name_lower) are computed again on insert, never written.
        const cols = await exec<{ c: string }>(`select column_name as c from information_schema.columns where table_schema = 'public' and table_name = '${t}' and is_generated = 'NEVER' order by ordinal_position`);
        template.push({ table: t, columns: cols.map((r) => `"${r.c}"`).join(", "), rows: await exec(`select * from "${t}"`) });
      }
      // The write log (takeTouched), made after the template was read: it is no table of the app's.
      await exec(`create table fuzz_touched (t text primary key)`);
      await exec(`create function fuzz_touch() returns trigger language plpgsql as $$ begin insert into fuzz_touched values (TG_TABLE_NAME) on conflict do nothing; return null; end $$`);
      for (const t of tables) {
        await exec(`create trigger fuzz_touch_rows after insert or update or delete on "${t}" for each row execute function fuzz_touch()`);
        await exec(`create trigger fuzz_touch_truncate after truncate on "${t}" for each statement execute function fuzz_touch()`);
      }
      // The log is checked, not trusted: a write it missed would let a refused call's write pass.
      await exec(`update operators set role = role where username = 'fuzz-viewer'`);
      expect(await takeTouched(), "the write log names a written table").toEqual(["operators"]);
      touchedSinceReset.clear();
      await app.subscriptions.refresh();
      cleanMarks = await fullMarks();
      templateSnapshot = await snapshot(tables);
    }, 120_000);

    afterAll(async () => {
      const line = `fuzz totals: ${totals.procedures} procedures + ${totals.endpoints} HTTP endpoints, ${totals.cases} cases, ${totals.refused} refused, ${totals.accepted} accepted (${totals.badText} cases with NUL or a lone surrogate, all refused), ${totals.failures} failures (FUZZ_RUNS=${RUNS})`;
      process.stdout.write(`\n${line} [shard ${shard + 1} of ${FUZZ_SHARDS}]\n`);
      await app?.close();
    });

    /**
     * Requests still under way. Every case awaits its own, and a test that timed out stops
     * starting new ones (its signal); the next test first waits for these to end, so no write
     * of one case lands in the next case's "before" picture.
     */
    const inFlight = new Set<Promise<unknown>>();
    function tracked<T>(request: Promise<T>): Promise<T> {
      inFlight.add(request);
      const forget = () => void inFlight.delete(request);
      request.then(forget, forget);
      return request;
    }
    beforeEach(async () => {
      await Promise.allSettled([...inFlight]);
      await app.idle();
    });

    async function send(method: string, path: string, init: { body?: string; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<Answer> {
      const res = await tracked(fetch(`${app.url}${path}`, {
        method,
        headers: init.headers,
        body: init.body,
        signal: AbortSignal.timeout(init.timeoutMs ?? 30_000),
      }));
      const text = method === "HEAD" ? "" : await tracked(res.text());
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: kept as text
      }
      return { status: res.status, body, text };
    }

    /** A tRPC call; `raw` sends the text as it is (bodies that JSON.stringify cannot make). */
    function callTrpc(type: "query" | "mutation", path: string, input: { value: unknown } | { raw: string }): Promise<Answer> {
      const text = "raw" in input ? input.raw : input.value === undefined ? undefined : encode(input.value);
      // As the dashboard itself would send it: same origin, so only the input decides.
      const headers = { cookie, "content-type": "application/json", origin: app.url, "sec-fetch-site": "same-origin" };
      if (type === "query") return send("GET", `/api/trpc/${path}${text === undefined ? "" : `?input=${encodeURIComponent(text)}`}`, { headers });
      return send("POST", `/api/trpc/${path}`, { headers, body: text });
    }

    /**
     * superjson's own serializer refuses objects with __proto__/constructor/prototype keys, so
     * such inputs go as the plain JSON a hostile client would send (the server must cope).
     */
    function encode(value: unknown): string {
      try {
        return JSON.stringify(superjson.serialize(value));
      } catch {
        return JSON.stringify({ json: value });
      }
    }

    function limitSize(path: string, v: unknown): unknown {
      const limits = SIZE_LIMITS[path];
      if (!limits || typeof v !== "object" || v === null) return v;
      const out = { ...(v as Record<string, unknown>) };
      for (const [k, max] of Object.entries(limits)) if (typeof out[k] === "number") out[k] = Math.min(out[k] as number, max);
      return out;
    }

    /** Bodies no JSON.stringify of a value produces: bad JSON, prototype keys, superjson tricks. */
    const rawBodies = fc.constantFrom(
      "{",
      "",
      "null",
      '{"json":',
      '{"json":{"__proto__":{"polluted":true}}}',
      '{"json":{"constructor":{"prototype":{"polluted":true}}}}',
      '{"__proto__":{"json":1}}',
      '{"json":{"clusterId":"NaN"},"meta":{"values":{"clusterId":["number"]}}}',
      '{"json":"Infinity","meta":{"values":["number"]}}',
      '{"json":{"a":"x"},"meta":{"values":{"a":["class","Nope"]}}}',
      '{"json":{"a":1},"meta":{"values":{"__proto__.polluted":["Date"]}}}',
      '{"json":{"a":1},"meta":{"referentialEqualities":{"a":["__proto__"]}}}',
      `{"json":${"[".repeat(5000)}${"]".repeat(5000)}}`,
    );

    function checkRefusal(label: string, a: Answer): void {
      const err = (a.body as ErrorBody)?.error?.json;
      if (a.status !== 400 || err?.data?.code !== "BAD_REQUEST") return;
      const fields = err.data.fieldErrors;
      // A schema refusal: the message names the first field ("input" for the root). A domain
      // rule (wrong current password, weak password) names its field in fieldErrors and says
      // why in words, as the form shows it beside that field.
      if (fields && Object.keys(fields).length > 0) {
        const first = Object.keys(fields)[0] || "input";
        if (err.message === fields[first]) return;
        expect(err.message, `${label}: 400 without the field's name: ${a.text.slice(0, 300)}`).toContain(first);
      } else {
        expect(err.message ?? "", `${label}: 400 without a message`).not.toBe("");
      }
    }

    for (const [path, proc] of procedures.filter((_, i) => i % FUZZ_SHARDS === shard)) {
      const type = proc._def.type;
      it(
        `${path} (${type})`,
        async ({ signal }) => {
          await reset();
          totals.procedures++;
          if (type === "subscription") {
            // SSE streams stay open by design: each case opens one and closes it as soon as
            // the answer's status is known (well-formed and broken inputs alike).
            const schema = proc._def.inputs[0];
            const inputs = fc.sample(fc.oneof(wellFormed(schema, ids).map((value) => ({ value })), broken(schema, ids).map((value) => ({ value }))), RUNS);
            for (const input of inputs) {
              signal.throwIfAborted();
              const ctl = new AbortController();
              const q = input.value === undefined ? "" : `?input=${encodeURIComponent(encode(input.value))}`;
              const res = await tracked(fetch(`${app.url}/api/trpc/${path}${q}`, { headers: { cookie, accept: "text/event-stream", origin: app.url, "sec-fetch-site": "same-origin" }, signal: ctl.signal }));
              totals.cases++;
              if (res.status >= 400) totals.refused++;
              else totals.accepted++;
              ctl.abort();
              await res.body?.cancel().catch(() => {});
              if (res.status >= 500) totals.failures++;
              expect(res.status, `${path} ${JSON.stringify(input.value)?.slice(0, 200)}`).toBeLessThan(500);
            }
            return;
          }
          const schema = proc._def.inputs[0];
          const good = wellFormed(schema, ids).map((v) => limitSize(path, repairKnownRefinements(v)));
          const costly = COSTLY[path];
          const runs = Math.ceil(RUNS * (costly?.runsShare ?? 1));
          const cases = fc.oneof(
            { weight: 5, arbitrary: good.map((value) => ({ kind: "well-formed", input: { value } as { value: unknown } | { raw: string } })) },
            { weight: 5, arbitrary: broken(schema, ids, good).map((value) => ({ kind: "broken", input: { value } as { value: unknown } | { raw: string } })) },
            { weight: 1, arbitrary: rawBodies.map((raw) => ({ kind: "raw", input: { raw } as { value: unknown } | { raw: string } })) },
          );
          let baseline = await snapshot(await takeTouched());
          let writesSinceReset = 0;
          const acceptedBefore = totals.accepted;
          await fc.assert(
            fc.asyncProperty(cases, async (c) => {
              signal.throwIfAborted();
              const label = `${path} [${c.kind}] ${("raw" in c.input ? c.input.raw : (JSON.stringify(c.input.value) ?? "undefined")).slice(0, 300)}`;
              const a = await callTrpc(type, path, c.input);
              totals.cases++;
              try {
                expect(a.status, `${label}: ${a.text.slice(0, 500)}`).toBeLessThan(500);
                // A NUL or a lone surrogate in any string of a well-formed input: a 400 naming
                // that field (before the schema runs), and nothing changes (checked below).
                const bad = c.kind === "well-formed" && "value" in c.input ? findBadText(c.input.value) : null;
                if (bad) {
                  totals.badText++;
                  expect(a.status, `${label}: ${a.text.slice(0, 300)}`).toBe(400);
                  expect((a.body as ErrorBody).error?.json?.message, label).toBe(`${bad.path || "input"}: ${bad.reason}`);
                }
                if (a.status >= 400) {
                  totals.refused++;
                  checkRefusal(label, a);
                  const written = await takeTouched();
                  if (written.length > 0) expect(await snapshot(written), `${label}: a refused call changed the database`).toBe(baseline);
                } else {
                  totals.accepted++;
                  let written = await takeTouched();
                  if (written.length > 0) {
                    // Back to the template now and then: a thousand accepted writes (a demo
                    // cluster with a day of history each) made each snapshot hash ever more rows.
                    if (++writesSinceReset >= (costly?.resetAfterWrites ?? RESET_AFTER_WRITES)) {
                      await reset();
                      writesSinceReset = 0;
                      written = [];
                    }
                    await keepOwnerSignedIn(written);
                    baseline = await snapshot([...written, ...(await takeTouched())]);
                  }
                }
              } catch (err) {
                totals.failures++;
                throw err;
              }
            }),
            { numRuns: runs, endOnFailure: true },
          );
          if (process.env.FUZZ_DEBUG) process.stdout.write(`${path}: ${totals.accepted - acceptedBefore} of ${runs} accepted\n`);
        },
        RUNS * CASE_MS + 30_000,
      );
    }

    it.runIf(shard === 0)("a refused input names its field in the message, in words", async () => {
      const a = await callTrpc("query", "topology.get", { value: { clusterId: "not-a-uuid" } });
      expect(a.status).toBe(400);
      expect((a.body as ErrorBody).error?.json?.message).toMatch(/^clusterId: /);
      const b = await callTrpc("query", "topology.get", { value: null });
      expect((b.body as ErrorBody).error?.json?.message).toMatch(/^input: /);
    });

    describe.runIf(shard === 1 % FUZZ_SHARDS)("agent endpoints", () => {
      it("POST /api/agent/report: every field, well-formed and broken, with a real token", async ({ signal }) => {
        await reset();
        totals.endpoints++;
        const peers = { uuids: ids.uuids };
        const good = wellFormed(agentReportSchema, peers).map((v) => repairKnownRefinements(v));
        const cases = fc.oneof(
          { weight: 4, arbitrary: good.map((v) => ({ kind: "well-formed", body: JSON.stringify(v), auth: `Bearer ${agentToken}` })) },
          { weight: 5, arbitrary: broken(agentReportSchema, peers, good).map((v) => ({ kind: "broken", body: JSON.stringify(v) ?? "", auth: `Bearer ${agentToken}` })) },
          {
            weight: 1,
            arbitrary: fc.tuple(good, fc.constantFrom("", "Bearer", "Bearer ", "Bearer nope", `bearer ${agentToken}`, `Basic ${agentToken}`, `Bearer ${agentToken}x`, `Bearer ${"a".repeat(5000)}`, "Bearer \u00e9")).map(([v, auth]) => ({
              kind: "token",
              body: JSON.stringify(v),
              auth,
            })),
          },
          { weight: 1, arbitrary: fc.constantFrom("{", "", "[]", '{"__proto__":{"listenerAlive":true}}', "x".repeat(70_000)).map((body) => ({ kind: "raw", body, auth: `Bearer ${agentToken}` })) },
        );
        let baseline = await snapshot(await takeTouched());
        await fc.assert(
          fc.asyncProperty(cases, async (c) => {
            signal.throwIfAborted();
            const label = `report [${c.kind}] ${c.body.slice(0, 300)}`;
            let a: Answer;
            try {
              a = await send("POST", "/api/agent/report", { body: c.body, headers: { "content-type": "application/json", ...(c.auth ? { authorization: c.auth } : {}) } });
            } catch (err) {
              // Headers that fetch itself refuses to send (non-Latin-1) never reach the app.
              if (err instanceof TypeError && /header/i.test(String((err as { cause?: unknown }).cause ?? err.message))) return;
              throw err;
            }
            totals.cases++;
            try {
              expect(a.status, `${label}: ${a.text.slice(0, 300)}`).toBeLessThan(500);
              const bad = c.kind === "well-formed" ? findBadText(JSON.parse(c.body)) : null;
              if (bad) {
                totals.badText++;
                // 429 (this agent's rate limit) is checked before the body is read.
                if (a.status !== 429) {
                  expect(a.status, label).toBe(400);
                  // The schema's own refusal may come first (it names its field); ours names the spoiled one.
                  expect((a.body as { error?: string }).error ?? "", label).toMatch(/^[\w.()[\]]+: /);
                }
              }
              if (a.status >= 400) {
                totals.refused++;
                if (a.status === 400) expect((a.body as { error?: string }).error ?? "", label).toMatch(/\w+/);
                const written = await takeTouched();
                if (written.length > 0) expect(await snapshot(written), `${label}: a refused report changed the database`).toBe(baseline);
              } else {
                totals.accepted++;
                baseline = await snapshot(await takeTouched());
              }
            } catch (err) {
              totals.failures++;
              throw err;
            }
          }),
          { numRuns: RUNS, endOnFailure: true },
        );
      }, RUNS * CASE_MS + 30_000);

      it("GET /api/agent/config?wait=…: odd waits and bad tokens", async ({ signal }) => {
        totals.endpoints++;
        // The endpoint may come from another branch: where it is missing (404 with a good
        // token) only "no 5xx" is checked; where it exists, tokens and waits are checked too.
        const probe = await send("GET", "/api/agent/config", { headers: { authorization: `Bearer ${agentToken}` }, timeoutMs: 5000 });
        const exists = probe.status !== 404;
        const waits = fc.oneof(fc.constantFrom("", "0", "1", "-1", "1.5", "NaN", "Infinity", "-Infinity", "1e309", "61", "99999999999999999999", "0x10", " 1", "1;2", "%00", "\u0661", "[]"), fc.string({ maxLength: 8 }));
        const tokens = fc.constantFrom(agentToken, "", "nope", `${agentToken}x`, "a".repeat(5000));
        await fc.assert(
          fc.asyncProperty(waits, tokens, async (wait, token) => {
            signal.throwIfAborted();
            const ctl = AbortSignal.timeout(300);
            let status: number;
            try {
              const res = await tracked(fetch(`${app.url}/api/agent/config?wait=${encodeURIComponent(wait)}`, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: ctl }));
              status = res.status;
              await res.body?.cancel().catch(() => {});
            } catch (err) {
              // A valid long-poll is still waiting: that is the endpoint working, not failing.
              if ((err as Error).name === "TimeoutError" || (err as Error).name === "AbortError") {
                totals.cases++;
                totals.accepted++;
                return;
              }
              throw err;
            }
            totals.cases++;
            if (status >= 400) totals.refused++;
            else totals.accepted++;
            if (status >= 500) totals.failures++;
            expect(status, `config wait=${JSON.stringify(wait)} token=${token.slice(0, 12)}`).toBeLessThan(500);
            // A bad token is refused (401; 400/429 if the wait or a rate limit is checked first).
            if (exists && token !== agentToken) expect([400, 401, 429], `config with a bad token`).toContain(status);
          }),
          { numRuns: RUNS, endOnFailure: true },
        );
      }, RUNS * CASE_MS + 30_000);
    });

    describe.runIf(shard === 2 % FUZZ_SHARDS)("subscriptions", () => {
      it("/sub/<token> with odd paths, formats and methods", async ({ signal }) => {
        await reset();
        totals.endpoints++;
        const tokenPath = fc.oneof(
          fc.constant(subToken),
          fc.constantFrom("", "..", "../..", "%2e%2e", "%00", `${subToken}%00`, "%zz", "%", `${subToken}/..`, `..%2f${subToken}`, "a".repeat(10_000), "\u00e9\u{1F1FA}\u{1F1F8}", "%F0%9F", "%C0%AF", "//", "?", "#"),
          fc.string({ maxLength: 40 }).map(encodeURIComponent),
          fc.string({ unit: "grapheme", maxLength: 10 }),
        );
        const format = fc.oneof(
          fc.constantFrom(null, "", "json", "clash", "singbox", "sing-box", "base64", "links", "JSON", "xml", "json&format=clash", "%00", "a".repeat(5000)),
          fc.string({ maxLength: 12 }),
        );
        const method = fc.constantFrom("GET", "GET", "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH");
        const ua = fc.constantFrom(undefined, "clash.meta", "sing-box 1.9", "Mozilla/5.0", "v2rayNG/1.8", "");
        await fc.assert(
          fc.asyncProperty(tokenPath, format, method, ua, async (tok, fmt, m, agent) => {
            signal.throwIfAborted();
            const q = fmt === null ? "" : `?format=${encodeURIComponent(fmt)}`;
            let a: Answer;
            try {
              a = await send(m, `/sub/${tok}${q}`, { headers: agent === undefined ? {} : { "user-agent": agent } });
            } catch (err) {
              // fetch refuses some URLs itself (they never reach the app).
              if (err instanceof TypeError) return;
              throw err;
            }
            totals.cases++;
            if (a.status >= 400) totals.refused++;
            else totals.accepted++;
            if (a.status >= 500) totals.failures++;
            const label = `${m} /sub/${tok.slice(0, 60)}${q.slice(0, 60)}`;
            expect(a.status, `${label}: ${a.text.slice(0, 200)}`).toBeLessThan(500);
            // Clients resolve dot segments ("/sub/.." is "/"): only paths still under /sub/ reach it.
            const reachesSub = new URL(`/sub/${tok}`, app.url).pathname.startsWith("/sub/");
            if (reachesSub && m !== "GET" && m !== "HEAD") expect(a.status, label).toBe(405);
            // The real token with a known format is answered, whatever the app says it is.
            if (tok === subToken && m === "GET" && (fmt === null || ["", "json", "clash", "singbox", "sing-box", "base64", "links"].includes(fmt))) expect(a.status, label).toBe(200);
          }),
          { numRuns: RUNS, endOnFailure: true },
        );
      }, RUNS * CASE_MS + 30_000);
    });
  });
}
