/**
 * Issue 21, point 12, over real HTTP: topology.onChange (server-sent events) streams are
 * capped per session and per API token; closing one gives its place back. And every tRPC
 * answer says Cache-Control: no-store.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { operators } from "@/db/schema";
import { createApiToken } from "@/server/accounts/api-tokens";
import { MAX_CHANGE_STREAMS, openChangeStreams } from "./routers/topology";
import { startTestApp, trpcHttp, type TestApp } from "./http-testing";

process.env.DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "rb-streams-"));

let app: TestApp;
let cookie: string;
let clusterId: string;

beforeAll(async () => {
  app = await startTestApp({ devtools: false });
  cookie = await app.cookie("admin");
  const created = await trpcHttp(app, cookie, "mutation", "clusters.create", { name: "Streams" });
  clusterId = (created.body.result?.data?.json as { id: string }).id;
}, 60_000);
afterAll(async () => app?.close());

interface Stream {
  status: number;
  /** The whole answer of a refused stream (it ends after its error event). */
  refusal(): Promise<string>;
  close(): Promise<void>;
}

/** Opens one SSE stream as the dashboard does; resolves once the server has answered its headers. */
async function open(headers: Record<string, string>): Promise<Stream> {
  const ctl = new AbortController();
  const input = encodeURIComponent(JSON.stringify({ json: { clusterId } }));
  const res = await fetch(`${app.url}/api/trpc/topology.onChange?input=${input}`, { headers: { accept: "text/event-stream", ...headers }, signal: ctl.signal });
  return {
    status: res.status,
    refusal: () => res.text(),
    async close() {
      ctl.abort();
      await res.body?.cancel().catch(() => {});
    },
  };
}

const total = () => [...openChangeStreams().values()].reduce((a, b) => a + b, 0);

/** Waits until the server has seen streams close (its own count, polled: no fixed sleep). */
async function settled(count: () => number, expected: number) {
  await expect.poll(count, { timeout: 10_000, interval: 20 }).toBe(expected);
}

/** Over SSE a refusal is the stream's one error event (tRPC's way): its code and message. */
function refusedWith(text: string): { code?: string; httpStatus?: number; message?: string } {
  const m = /event: serialized-error\ndata: (.*)\n/.exec(text);
  if (!m) return {};
  const e = JSON.parse(m[1]!) as { json?: { message?: string; data?: { code?: string; httpStatus?: number } } };
  return { code: e.json?.data?.code, httpStatus: e.json?.data?.httpStatus, message: e.json?.message };
}

describe("topology.onChange streams", () => {
  it(`allow ${MAX_CHANGE_STREAMS} per session, refuse the next with TOO_MANY_REQUESTS, and give a place back when one closes`, async () => {
    const streams: Stream[] = [];
    for (let i = 0; i < MAX_CHANGE_STREAMS; i++) streams.push(await open({ cookie }));
    expect(streams.map((s) => s.status)).toEqual(Array(MAX_CHANGE_STREAMS).fill(200));
    expect(total()).toBe(MAX_CHANGE_STREAMS);
    const refused = refusedWith(await (await open({ cookie })).refusal());
    expect(refused).toEqual({
      code: "TOO_MANY_REQUESTS",
      httpStatus: 429,
      message: `Too many live update streams open for this session (at most ${MAX_CHANGE_STREAMS}): close a tab or wait for one to end`,
    });
    expect(total()).toBe(MAX_CHANGE_STREAMS);
    // Another operator's session is not affected.
    const other = await open({ cookie: await app.cookie("viewer") });
    expect(total()).toBe(MAX_CHANGE_STREAMS + 1);
    await other.close();
    await settled(total, MAX_CHANGE_STREAMS);
    // One closes: one more may open.
    await streams.pop()!.close();
    await settled(total, MAX_CHANGE_STREAMS - 1);
    streams.push(await open({ cookie }));
    expect(total()).toBe(MAX_CHANGE_STREAMS);
    await Promise.all(streams.map((s) => s.close()));
    await settled(total, 0);
  });

  it(`allow ${MAX_CHANGE_STREAMS} per API token`, async () => {
    const [op] = await app.database.db.select().from(operators).where(eq(operators.username, "http-admin"));
    const { token, id } = await createApiToken(app.database.db, { operatorId: op!.id, username: op!.username }, { name: "streamer", scopes: ["read"] });
    const streams: Stream[] = [];
    for (let i = 0; i < MAX_CHANGE_STREAMS; i++) streams.push(await open({ authorization: `Bearer ${token}` }));
    expect(openChangeStreams().get(`api-token:${id}`)).toBe(MAX_CHANGE_STREAMS);
    expect(refusedWith(await (await open({ authorization: `Bearer ${token}` })).refusal()).code).toBe("TOO_MANY_REQUESTS");
    await Promise.all(streams.map((s) => s.close()));
    await settled(() => openChangeStreams().get(`api-token:${id}`) ?? 0, 0);
  });
});

describe("tRPC answers", () => {
  it("say Cache-Control: no-store, for data, errors and batches", async () => {
    const list = await fetch(`${app.url}/api/trpc/clusters.list`, { headers: { cookie } });
    expect(list.status).toBe(200);
    expect(list.headers.get("cache-control")).toBe("no-store");
    const anonymous = await fetch(`${app.url}/api/trpc/clusters.list`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("cache-control")).toBe("no-store");
    const batch = await fetch(`${app.url}/api/trpc/clusters.list,auth.me?batch=1&input=${encodeURIComponent("{}")}`, { headers: { cookie } });
    expect(batch.headers.get("cache-control")).toBe("no-store");
    const tooBig = await fetch(`${app.url}/api/trpc/clusters.create`, { method: "POST", headers: { cookie, "content-type": "text/plain" }, body: "x" });
    expect(tooBig.status).toBe(415);
    expect(tooBig.headers.get("cache-control")).toBe("no-store");
  });
});
