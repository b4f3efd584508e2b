import { afterEach, describe, expect, it } from "vitest";
import http from "node:http";
import net from "node:net";
import { randomUUID } from "node:crypto";
import { agentReportSchema } from "@/core/monitoring-contract";
import { heartbeatBodySchema } from "@/core/agent-wire";
import { SimNetwork, startSimServer, tcpCheck, type SimServer, type SimServerOptions } from "@/server/demo/sim-server";
import { startFleet, type Fleet } from "@/server/demo/fleet";
import { generateLocalPlan, fleetPlanSchema } from "./plan";
import { startControlServer, type ControlServer } from "./control";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Captured {
  auth: string | undefined;
  body: unknown;
  at: number;
}

/** A fake app capturing agent reports and heartbeats. */
async function fakeApp(status = 200): Promise<{ url: string; heartbeatUrl: string; reports: Captured[]; beats: Captured[]; setStatus(s: number): void }> {
  const reports: Captured[] = [];
  const beats: Captured[] = [];
  let code = status;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/api/agent/report") {
        reports.push({ auth: req.headers.authorization, body: JSON.parse(body), at: Date.now() });
        res.writeHead(code).end("{}");
      } else if (req.method === "POST" && req.url === "/api/agent/heartbeat") {
        beats.push({ auth: req.headers.authorization, body: body === "" ? null : JSON.parse(body), at: Date.now() });
        res.writeHead(204).end();
      } else res.writeHead(404).end();
    });
  });
  const port = await new Promise<number>((r) => server.listen(0, "127.0.0.1", () => r((server.address() as net.AddressInfo).port)));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${port}/api/agent/report`, heartbeatUrl: `http://127.0.0.1:${port}/api/agent/heartbeat`, reports, beats, setStatus: (s) => (code = s) };
}

async function sim(o: Partial<SimServerOptions> = {}): Promise<SimServer> {
  const s = await startSimServer({
    serverId: randomUUID(),
    token: "tok-" + randomUUID(),
    inboundPorts: [0],
    healthPort: 0,
    reportUrl: "",
    reportIntervalMs: 60_000,
    neighbours: [],
    capacityBps: 100_000_000,
    random: () => 0.5,
    network: new SimNetwork(),
    ...o,
  });
  cleanups.push(() => s.stop());
  return s;
}

const connects = async (port: number) => (await tcpCheck("127.0.0.1", port, 500)).ok;

async function getHealth(port: number): Promise<{ status: number; body: string; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(`http://127.0.0.1:${port}/health`);
  return { status: res.status, body: await res.text(), ms: Date.now() - t0 };
}

// A hang bound, not a speed bound: a busy machine must still pass.
const until = async (cond: () => boolean, ms = 30_000) => {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
};

/**
 * Starts a sibling reporting every 50 ms to the same app and waits for `n` of its reports:
 * a stopped schedule on the same interval has come round meanwhile (instead of a sleep).
 */
async function reportsOfSibling(app: { url: string; reports: Captured[] }, n: number): Promise<void> {
  await sim({ reportUrl: app.url, reportIntervalMs: 50, token: "tok-sibling" });
  await until(() => app.reports.filter((r) => r.auth === "Bearer tok-sibling").length >= n);
}

describe("sim server listeners", () => {
  it("listens on its inbound ports (echo) and answers GET /health", async () => {
    const s = await sim({ inboundPorts: [0, 0] });
    expect(s.inboundPorts).toHaveLength(2);
    for (const p of s.inboundPorts) expect(await connects(p)).toBe(true);
    // echo
    const echoed = await new Promise<string>((resolve) => {
      const c = net.connect(s.inboundPorts[0]!, "127.0.0.1", () => c.write("ping"));
      c.once("data", (d) => {
        resolve(d.toString());
        c.destroy();
      });
    });
    expect(echoed).toBe("ping");
    expect(await getHealth(s.healthPort)).toMatchObject({ status: 200, body: "ok" });
    expect((await fetch(`http://127.0.0.1:${s.healthPort}/other`)).status).toBe(404);
  });

  it("listenerDown closes inbound and health listeners; clearing reopens the same ports", async () => {
    const s = await sim();
    const [inbound] = s.inboundPorts;
    const health = s.healthPort;
    await s.setFault("listenerDown", true);
    expect(await connects(inbound!)).toBe(false);
    expect(await connects(health)).toBe(false);
    const r = await s.buildReport();
    expect(r.listenerAlive).toBe(false);
    expect(r.usersOnline).toBe(0);
    await s.setFault("listenerDown", false);
    expect(s.inboundPorts[0]).toBe(inbound);
    expect(await connects(inbound!)).toBe(true);
    expect((await s.buildReport()).listenerAlive).toBe(true);
  });

  it("firewalled closes the inbound ports while the agent still reports its listener alive", async () => {
    const s = await sim();
    const [inbound] = s.inboundPorts;
    await s.setFault("firewalled", true);
    expect(await connects(inbound!)).toBe(false);
    expect(await connects(s.healthPort)).toBe(true);
    expect((await s.buildReport()).listenerAlive).toBe(true);
    await s.clearFaults();
    expect(s.inboundPorts[0]).toBe(inbound);
    expect(await connects(inbound!)).toBe(true);
    expect(s.state().faults.firewalled).toBe(false);
  });

  it("slow delays the health endpoint; serviceDown makes it 503", async () => {
    const s = await sim();
    await s.setFault("slow", true, { ms: 300 });
    const slow = await getHealth(s.healthPort);
    expect(slow.status).toBe(200);
    expect(slow.ms).toBeGreaterThanOrEqual(250);
    // Off again: a request made after clearing it is answered while one made before still waits.
    await s.setFault("slow", true, { ms: 60_000 });
    const held = new AbortController();
    const before = fetch(`http://127.0.0.1:${s.healthPort}/health`, { signal: held.signal }).then(() => "slow request", () => "slow request");
    await until(() => s.state().healthRequestsHeld === 1);
    await s.setFault("slow", false);
    const after = getHealth(s.healthPort).then((r) => `fast request ${r.status}`);
    expect(await Promise.race([before, after])).toBe("fast request 200");
    held.abort();
    await s.setFault("serviceDown", true);
    expect((await getHealth(s.healthPort)).status).toBe(503);
    const r = await s.buildReport();
    expect(r).toMatchObject({ serviceRunning: false, listenerAlive: true, usersOnline: 0, txBps: 0 });
  });
});

describe("sim server reports", () => {
  it("POSTs valid reports with the bearer token every interval", async () => {
    const app = await fakeApp();
    const s = await sim({ reportUrl: app.url, reportIntervalMs: 100, token: "secret-token" });
    s.setUsers(100);
    await until(() => app.reports.length >= 3);
    for (const r of app.reports) {
      expect(r.auth).toBe("Bearer secret-token");
      const parsed = agentReportSchema.safeParse(r.body);
      expect(parsed.success).toBe(true);
    }
    // on average no faster than the interval (one slow POST may make the next gap short)
    const span = app.reports.at(-1)!.at - app.reports[0]!.at;
    expect(span / (app.reports.length - 1)).toBeGreaterThanOrEqual(60);
    // the sim counts a report once it has read the answer, a moment after the app saw it
    await until(() => s.state().reportsSent >= 3);
  });

  it("load follows setUsers with noise, capped at capacity", async () => {
    const s = await sim({ capacityBps: 50_000_000, perUserBps: 1_000_000, random: Math.random });
    s.setUsers(10);
    const r = await s.buildReport();
    expect(r.usersOnline).toBeGreaterThanOrEqual(9);
    expect(r.usersOnline).toBeLessThanOrEqual(11);
    expect(r.txBps).toBeGreaterThan(5_000_000);
    expect(r.txBps).toBeLessThan(15_000_000);
    s.setUsers(10_000);
    const big = await s.buildReport();
    expect(big.txBps).toBeLessThanOrEqual(50_000_000);
    expect(big.rxBps).toBeLessThanOrEqual(50_000_000);
    expect(big.cpu).toBeGreaterThan(50);
    s.setUsers(0);
    expect((await s.buildReport()).txBps).toBe(0);
    s.setUsers(-5);
    expect((await s.buildReport()).usersOnline).toBe(0);
  });

  it("stopReporting stops the POSTs; clearing resumes them", async () => {
    const app = await fakeApp();
    const s = await sim({ reportUrl: app.url, reportIntervalMs: 50, token: "tok-silent" });
    await until(() => app.reports.length >= 1);
    await s.setFault("stopReporting", true);
    await until(() => s.state().reportsSent + s.state().reportsFailed >= app.reports.length); // in-flight report landed
    const n = app.reports.length;
    await reportsOfSibling(app, 3);
    expect(app.reports.filter((r) => r.auth === "Bearer tok-silent")).toHaveLength(n);
    await s.clearFaults();
    await until(() => app.reports.filter((r) => r.auth === "Bearer tok-silent").length > n);
  });

  it("heartbeats on their own timer, the first and then one every load interval carrying the load; none while stopReporting", async () => {
    const app = await fakeApp();
    const s = await sim({ reportUrl: app.url, reportIntervalMs: 60_000, heartbeatUrl: app.heartbeatUrl, heartbeatIntervalMs: 20, loadIntervalMs: 60_000, token: "tok-beat" });
    s.setUsers(40);
    await until(() => app.beats.length >= 3);
    // The first carries the load (the balancer sees the server at once); the next ones within
    // the load interval carry nothing; every body is what the panel's schema takes.
    expect(app.beats[0]!.auth).toBe("Bearer tok-beat");
    expect(heartbeatBodySchema.parse(app.beats[0]!.body)).toEqual({ load: { usersOnline: 40, rxBps: 68_000_000, txBps: 80_000_000 } });
    expect(app.beats.slice(1, 3).map((b) => b.body)).toEqual([null, null]);
    expect(app.reports).toHaveLength(1); // the report schedule is apart: one at start, the next in 60 s

    await s.setFault("stopReporting", true);
    await until(() => s.state().heartbeatsSent + s.state().heartbeatsFailed >= app.beats.filter((b) => b.auth === "Bearer tok-beat").length);
    const n = app.beats.filter((b) => b.auth === "Bearer tok-beat").length;
    // A sibling beating on the same interval has come round several times meanwhile.
    await sim({ reportUrl: "", reportIntervalMs: 60_000, heartbeatUrl: app.heartbeatUrl, heartbeatIntervalMs: 20, token: "tok-sibling" });
    await until(() => app.beats.filter((b) => b.auth === "Bearer tok-sibling").length >= 3);
    expect(app.beats.filter((b) => b.auth === "Bearer tok-beat")).toHaveLength(n);
    await s.clearFaults();
    await until(() => app.beats.filter((b) => b.auth === "Bearer tok-beat").length > n);

    // Without a heartbeat URL (an agent from before them) nothing is sent.
    const old = await sim({ reportUrl: app.url, reportIntervalMs: 60_000, token: "tok-old" });
    expect(await old.heartbeatNow(true)).toBe(false);
    expect(app.beats.filter((b) => b.auth === "Bearer tok-old")).toHaveLength(0);
  });

  it("with its users known, each report carries their traffic once (instance, seq + 1), shares of its rates; with a count alone, none", async () => {
    const app = await fakeApp();
    const s = await sim({ reportUrl: app.url, reportIntervalMs: 60_000, reportOnStart: false, token: "tok-users" });
    s.setUsers(3);
    expect((await s.buildReport()).users).toBeUndefined();
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    s.setUserIds(ids);
    expect(s.state().users).toBe(3);
    const first = await s.buildReport();
    const report = agentReportSchema.parse(first);
    expect(report.usersOnline).toBe(3);
    expect(report.users!.map((u) => u.email)).toEqual(ids);
    // The first report counts one interval: each user's share of the rates over 60 s.
    expect(report.users![0]).toEqual({ email: ids[0], down: Math.round((report.txBps / 3 / 8) * 60), up: Math.round((report.rxBps / 3 / 8) * 60 * 0.1) });
    const second = await s.buildReport();
    expect(second.instance).toBe(first.instance);
    expect(second.seq).toBe(first.seq! + 1);
    s.setUserIds([]);
    expect((await s.buildReport()).users).toBeUndefined();
    expect(s.state().users).toBe(0);
  });

  it("records failed POSTs (401, app down) without crashing", async () => {
    const app = await fakeApp(401);
    const s = await sim({ reportUrl: app.url, reportIntervalMs: 60_000 });
    await until(() => s.state().reportsFailed >= 1);
    expect(s.state()).toMatchObject({ lastReportStatus: 401, lastReportError: "HTTP 401" });
    const dead = await sim({ reportUrl: "http://127.0.0.1:1/api/agent/report", reportIntervalMs: 60_000 });
    const r = await dead.reportNow();
    expect(r.ok).toBe(false);
    expect(dead.state().reportsFailed).toBeGreaterThanOrEqual(1);
  });

  it("neighbour checks are real TCP connects; unreachableFrom fails only the chosen observers", async () => {
    const network = new SimNetwork();
    const t = await sim({ network });
    const a = await sim({ network });
    const b = await sim({ network });
    const nb = (x: SimServer) => ({ serverId: x.serverId, host: "127.0.0.1", port: x.inboundPorts[0]! });
    a.setNeighbours([nb(t), nb(b)]);
    b.setNeighbours([nb(t), nb(a)]);
    t.setNeighbours([nb(a), nb(b)]);
    const okOf = async (obs: SimServer, target: SimServer) =>
      (await obs.buildReport()).neighbours.find((n) => n.serverId === target.serverId);
    expect(await okOf(a, t)).toMatchObject({ ok: true, rttMs: expect.any(Number) });

    await t.setFault("unreachableFrom", true, { observers: [a.serverId] });
    expect(await okOf(a, t)).toEqual({ serverId: t.serverId, ok: false, rttMs: null });
    expect((await okOf(b, t))?.ok).toBe(true);
    expect(t.state().faults.unreachableFrom).toEqual([a.serverId]);

    await t.setFault("unreachableFrom", true); // default: from all its neighbours
    expect((await okOf(b, t))?.ok).toBe(false);
    await t.setFault("unreachableFrom", false, { observers: [b.serverId] });
    expect((await okOf(b, t))?.ok).toBe(true);
    expect((await okOf(a, t))?.ok).toBe(false);
    await t.clearFaults();
    expect((await okOf(a, t))?.ok).toBe(true);

    // listener down is seen by neighbours too
    await t.setFault("listenerDown", true);
    expect((await okOf(a, t))?.ok).toBe(false);
    const rep = await a.buildReport();
    expect(agentReportSchema.safeParse(rep).success).toBe(true);
  });

  it("stop closes everything and stops reporting", async () => {
    const app = await fakeApp();
    const s = await sim({ reportUrl: app.url, reportIntervalMs: 50 });
    await until(() => app.reports.length >= 1);
    const port = s.inboundPorts[0]!;
    await s.stop();
    const n = app.reports.length;
    await reportsOfSibling(app, 3);
    expect(app.reports.filter((r) => r.auth !== "Bearer tok-sibling")).toHaveLength(n);
    expect(await connects(port)).toBe(false);
    expect(await connects(s.healthPort)).toBe(false);
  });
});

describe("fleet and control endpoint", () => {
  async function fleetWithControl(n: number, appUrl = "") {
    const plan = generateLocalPlan(n, 0);
    const fleet: Fleet = await startFleet(plan, { appUrl, reportIntervalMs: 100, random: () => 0.5, neighbourTimeoutMs: 300 });
    cleanups.push(() => fleet.stop());
    const control: ControlServer = await startControlServer(fleet, 0);
    cleanups.push(() => control.close());
    return { plan, fleet, control };
  }
  const post = (url: string, body: unknown) =>
    fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  it("every server checks every other one and reports to the app", async () => {
    const app = await fakeApp();
    const { plan, fleet } = await fleetWithControl(3, app.url.replace("/api/agent/report", ""));
    await until(() => app.reports.length >= 6);
    const tokens = new Set(plan.servers.map((s) => `Bearer ${s.token}`));
    for (const r of app.reports) {
      expect(tokens.has(r.auth ?? "")).toBe(true);
      const rep = agentReportSchema.parse(r.body);
      expect(rep.neighbours).toHaveLength(2);
      expect(rep.neighbours.every((x) => x.ok)).toBe(true);
    }
    expect(fleet.state().servers.map((s) => s.name)).toEqual(["sim-01", "sim-02", "sim-03"]);
  });

  it("GET /state and POST /fault, /users, /clear", async () => {
    const { plan, fleet, control } = await fleetWithControl(3);
    const [s1, s2, s3] = plan.servers;
    const state = (await (await fetch(`${control.url}/state`)).json()) as { servers: { serverId: string }[] };
    expect(state.servers.map((s) => s.serverId)).toEqual(plan.servers.map((s) => s.serverId));

    let res = await post(`${control.url}/fault`, { serverId: s1!.serverId, fault: "listenerDown", on: true });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { faults: { listenerDown: boolean } }).faults.listenerDown).toBe(true);
    expect(await connects(fleet.get(s1!.serverId)!.inboundPorts[0]!)).toBe(false);

    res = await post(`${control.url}/fault`, {
      serverId: s2!.serverId,
      fault: "unreachableFrom",
      on: true,
      observers: [s3!.serverId],
    });
    expect(res.status).toBe(200);
    const rep3 = await fleet.get(s3!.serverId)!.buildReport();
    expect(rep3.neighbours.find((n) => n.serverId === s2!.serverId)?.ok).toBe(false);
    expect(rep3.neighbours.find((n) => n.serverId === s1!.serverId)?.ok).toBe(false); // listener down

    res = await post(`${control.url}/fault`, { serverId: s2!.serverId, fault: "slow", on: true, ms: 10 });
    expect(res.status).toBe(200);

    res = await post(`${control.url}/users`, { serverId: s1!.serverId, users: 42 });
    expect(res.status).toBe(200);
    res = await post(`${control.url}/users`, { users: { [s2!.serverId]: 7 } });
    expect(res.status).toBe(200);
    expect(fleet.get(s1!.serverId)!.state().users).toBe(42);
    expect(fleet.get(s2!.serverId)!.state().users).toBe(7);

    res = await post(`${control.url}/clear`, {});
    expect(res.status).toBe(200);
    expect(await connects(fleet.get(s1!.serverId)!.inboundPorts[0]!)).toBe(true);
    expect(fleet.get(s2!.serverId)!.state().faults).toEqual({
      listenerDown: false,
      firewalled: false,
      serviceDown: false,
      stopReporting: false,
      unreachableFrom: [],
      slowMs: 0,
    });
  });

  it("rejects bad control requests clearly", async () => {
    const { plan, control } = await fleetWithControl(2);
    let res = await post(`${control.url}/fault`, { serverId: plan.servers[0]!.serverId, fault: "meteor", on: true });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^fault: expected one of/);
    res = await post(`${control.url}/fault`, { serverId: "nope", fault: "serviceDown", on: true });
    expect(res.status).toBe(404);
    res = await fetch(`${control.url}/fault`, { method: "POST", body: "{not json" });
    expect(res.status).toBe(400);
    expect((await fetch(`${control.url}/nothing`)).status).toBe(404);
  });
});

describe("plan", () => {
  it("generateLocalPlan produces a valid plan with distinct ports", () => {
    const plan = generateLocalPlan(4, 21000);
    expect(fleetPlanSchema.parse(plan)).toEqual(plan);
    expect(plan.servers[1]).toMatchObject({ inboundPorts: [21002], healthPort: 21003 });
  });
  it("rejects duplicate ids and ports", () => {
    const plan = generateLocalPlan(2, 21000);
    const dup = { servers: [plan.servers[0]!, { ...plan.servers[1]!, serverId: plan.servers[0]!.serverId }] };
    expect(fleetPlanSchema.safeParse(dup).success).toBe(false);
    const dupPort = { servers: [plan.servers[0]!, { ...plan.servers[1]!, healthPort: 21000 }] };
    expect(fleetPlanSchema.safeParse(dupPort).success).toBe(false);
  });
});
