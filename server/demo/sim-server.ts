/**
 * A simulated VPN server for tests and demos (the app's live demo, live.ts, and the fleet scripts), entirely on 127.0.0.1:
 * real TCP listeners on its inbound ports (echo), an HTTP health endpoint (`GET /health`),
 * and an agent loop POSTing the agent report (core/monitoring-contract.ts) to the app, and,
 * given a heartbeat URL, the agent's heartbeats (core/heartbeat.ts) with its load every
 * LOAD_INTERVAL_S, as a real agent sends them.
 * Faults can be switched at run time (setFault / clearFaults, or the fleet's control port).
 */
import net from "node:net";
import http from "node:http";
import type { AgentReport, NeighbourCheck } from "@/core/monitoring-contract";
import type { HeartbeatBody } from "@/core/agent-wire";
import { HEARTBEAT_INTERVAL_S, LOAD_INTERVAL_S } from "@/core/heartbeat";

export interface SimNeighbour {
  serverId: string;
  host: string;
  port: number;
}

/**
 * Shared in-process "network" for the `unreachableFrom` fault: all sim servers of one fleet
 * live on 127.0.0.1, so a target cannot refuse particular observers by itself; instead the
 * observers consult this registry before their neighbour check.
 */
export class SimNetwork {
  private readonly blocked = new Map<string, Set<string>>();

  /** Observers' checks against `targetId` fail from now on. */
  block(targetId: string, observerIds: Iterable<string>): void {
    const set = this.blocked.get(targetId) ?? new Set<string>();
    for (const o of observerIds) set.add(o);
    this.blocked.set(targetId, set);
  }

  /** Lifts the block for the given observers, or all of them. */
  unblock(targetId: string, observerIds?: Iterable<string>): void {
    if (!observerIds) {
      this.blocked.delete(targetId);
      return;
    }
    const set = this.blocked.get(targetId);
    if (!set) return;
    for (const o of observerIds) set.delete(o);
    if (set.size === 0) this.blocked.delete(targetId);
  }

  isBlocked(observerId: string, targetId: string): boolean {
    return this.blocked.get(targetId)?.has(observerId) ?? false;
  }

  blockedObservers(targetId: string): string[] {
    return [...(this.blocked.get(targetId) ?? [])].sort();
  }
}

export const defaultSimNetwork = new SimNetwork();

export interface SimServerOptions {
  serverId: string;
  token: string;
  /** 0 = any free port (the bound port is kept across listenerDown/up). */
  inboundPorts: number[];
  healthPort: number;
  /** Full URL of POST /api/agent/report; "" disables reporting (no app). */
  reportUrl: string;
  reportIntervalMs: number;
  /**
   * Full URL of POST /api/agent/heartbeat; absent, none are sent (an agent from before them,
   * judged by the slow path alone). Every heartbeatIntervalMs (HEARTBEAT_INTERVAL_S), with the
   * load every loadIntervalMs (LOAD_INTERVAL_S); none while stopReporting is on.
   */
  heartbeatUrl?: string;
  heartbeatIntervalMs?: number;
  loadIntervalMs?: number;
  neighbours: SimNeighbour[];
  /** Link capacity; traffic never exceeds it. */
  capacityBps: number;
  host?: string;
  network?: SimNetwork;
  /** Average traffic per connected user (default 2 Mbit/s). */
  perUserBps?: number;
  /** Timeout of one neighbour TCP check (default min(1000, reportIntervalMs / 2)). */
  neighbourTimeoutMs?: number;
  /** Timeout of one report POST (default min(5000, reportIntervalMs)). */
  reportTimeoutMs?: number;
  /** Noise source in [0, 1); inject `() => 0.5` for no noise. */
  random?: () => number;
  /** Send the first report right after start (default true). */
  reportOnStart?: boolean;
}

/**
 * listenerDown: inbound listeners closed, and the agent says so. firewalled: inbound listeners
 * closed (nothing reaches them from outside) while the agent still believes its listener is
 * alive — only the active probe and the mesh notice.
 */
export const SIM_FAULTS = ["listenerDown", "firewalled", "serviceDown", "stopReporting", "unreachableFrom", "slow"] as const;
export type SimFault = (typeof SIM_FAULTS)[number];

export interface SimFaultArgs {
  /** unreachableFrom: the observers whose checks against this server fail (default: all neighbours). */
  observers?: string[];
  /** slow: delay of the health endpoint in ms. */
  ms?: number;
}

export interface SimFaultState {
  listenerDown: boolean;
  firewalled: boolean;
  serviceDown: boolean;
  stopReporting: boolean;
  unreachableFrom: string[];
  slowMs: number;
}

export interface ReportAttempt {
  ok: boolean;
  status?: number;
  error?: string;
  report: AgentReport;
}

export interface SimServerState {
  serverId: string;
  inboundPorts: number[];
  healthPort: number;
  listening: boolean;
  users: number;
  faults: SimFaultState;
  reportsSent: number;
  reportsFailed: number;
  heartbeatsSent: number;
  heartbeatsFailed: number;
  /** Health requests held back by the slow fault right now. */
  healthRequestsHeld: number;
  lastReportStatus: number | null;
  lastReportError: string | null;
  lastReport: AgentReport | null;
  neighbours: SimNeighbour[];
}

export interface SimServer {
  readonly serverId: string;
  /** Bound ports (after start). */
  readonly inboundPorts: number[];
  readonly healthPort: number;
  setUsers(n: number): void;
  /**
   * The users the balancer gave this server (their config `email`: the subscriber's id): their
   * count is the users, and each report carries the traffic of those online, once per report
   * (instance and seq), as an agent's does, so their usage and "last seen" move.
   */
  setUserIds(ids: readonly string[]): void;
  setNeighbours(neighbours: SimNeighbour[]): void;
  setFault(fault: SimFault, on: boolean, args?: SimFaultArgs): Promise<void>;
  clearFaults(): Promise<void>;
  /** The report the agent would send now (runs the neighbour checks). */
  buildReport(): Promise<AgentReport>;
  /** Builds and POSTs one report now, even while `stopReporting` is on. */
  reportNow(): Promise<ReportAttempt>;
  /** POSTs one heartbeat now (with the load when `withLoad`), even while `stopReporting` is on; false without a heartbeat URL or on failure. */
  heartbeatNow(withLoad: boolean): Promise<boolean>;
  state(): SimServerState;
  stop(): Promise<void>;
}

type Listener = { server: net.Server; sockets: Set<net.Socket> };

function track(server: net.Server): Listener {
  const sockets = new Set<net.Socket>();
  server.on("connection", (s: net.Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  return { server, sockets };
}

function listenOn(l: Listener, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      l.server.off("listening", onListening);
      reject(err);
    };
    const onListening = () => {
      l.server.off("error", onError);
      resolve((l.server.address() as net.AddressInfo).port);
    };
    l.server.once("error", onError);
    l.server.once("listening", onListening);
    l.server.listen(port, host);
  });
}

function closeListener(l: Listener): Promise<void> {
  return new Promise((resolve) => {
    for (const s of l.sockets) s.destroy();
    if (!l.server.listening) return resolve();
    l.server.close(() => resolve());
  });
}

/** TCP connect check with a timeout; rtt in ms or null. */
export function tcpCheck(host: string, port: number, timeoutMs: number): Promise<{ ok: boolean; rttMs: number | null }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const sock = net.connect({ host, port });
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ ok, rttMs: ok ? Math.round((performance.now() - t0) * 100) / 100 : null });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    sock.once("connect", () => finish(true));
    sock.once("error", () => finish(false));
  });
}

export async function startSimServer(opts: SimServerOptions): Promise<SimServer> {
  const host = opts.host ?? "127.0.0.1";
  const network = opts.network ?? defaultSimNetwork;
  const random = opts.random ?? Math.random;
  const perUserBps = opts.perUserBps ?? 2_000_000;
  const neighbourTimeoutMs = opts.neighbourTimeoutMs ?? Math.max(50, Math.min(1000, opts.reportIntervalMs / 2));
  const reportTimeoutMs = opts.reportTimeoutMs ?? Math.max(100, Math.min(5000, opts.reportIntervalMs));

  let users = 0;
  let userIds: string[] = [];
  // Exactly-once delivery of per-user traffic, as the agent keeps it (a random instance, seq + 1 a report).
  const instance = `sim-${Math.floor(random() * 1e12).toString(36)}-${opts.serverId.slice(0, 8)}`;
  let seq = 0;
  let lastTrafficAtMs: number | null = null;
  let neighbours = [...opts.neighbours];
  const faults: SimFaultState = {
    listenerDown: false,
    firewalled: false,
    serviceDown: false,
    stopReporting: false,
    unreachableFrom: [],
    slowMs: 0,
  };
  let reportsSent = 0;
  let reportsFailed = 0;
  let lastReportStatus: number | null = null;
  let lastReportError: string | null = null;
  let lastReport: AgentReport | null = null;
  let stopped = false;
  let reportTimer: ReturnType<typeof setTimeout> | null = null;
  let reporting: Promise<unknown> | null = null;
  let heartbeatsSent = 0;
  let heartbeatsFailed = 0;
  let heartbeatTimer: ReturnType<typeof setTimeout> | null = null;
  let heartbeating: Promise<unknown> | null = null;
  const heartbeatIntervalMs = opts.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_S * 1000;
  const loadIntervalMs = opts.loadIntervalMs ?? LOAD_INTERVAL_S * 1000;
  const pendingSlow = new Set<ReturnType<typeof setTimeout>>();

  const inbound: Listener[] = opts.inboundPorts.map(() =>
    track(
      net.createServer((sock) => {
        sock.on("error", () => {});
        sock.pipe(sock); // echo, like a proxy that answers
        sock.setTimeout(30_000, () => sock.destroy());
      }),
    ),
  );
  const healthHttp = http.createServer((req, res) => {
    const answer = () => {
      if (req.method === "GET" && (req.url === "/health" || req.url?.startsWith("/health?"))) {
        if (faults.serviceDown) {
          res.writeHead(503, { "content-type": "text/plain" }).end("service down");
        } else {
          res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        }
      } else {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      }
    };
    if (faults.slowMs > 0) {
      const t = setTimeout(() => {
        pendingSlow.delete(t);
        answer();
      }, faults.slowMs);
      pendingSlow.add(t);
    } else answer();
  });
  healthHttp.keepAliveTimeout = 1000;
  const health = track(healthHttp);

  const ports = [...opts.inboundPorts];
  let healthPort = opts.healthPort;

  async function openListeners(): Promise<void> {
    for (let i = 0; i < inbound.length; i++) {
      if (faults.firewalled) break;
      const l = inbound[i]!;
      if (!l.server.listening) ports[i] = await listenOn(l, ports[i] ?? 0, host);
    }
    if (!health.server.listening) healthPort = await listenOn(health, healthPort, host);
  }
  async function closeListeners(): Promise<void> {
    for (const t of pendingSlow) clearTimeout(t);
    pendingSlow.clear();
    await Promise.all([...inbound.map(closeListener), closeListener(health)]);
  }

  /** What the agent believes (a firewalled server's agent still sees its listener up). */
  function listening(): boolean {
    if (faults.listenerDown) return false;
    return (faults.firewalled || inbound.every((l) => l.server.listening)) && health.server.listening;
  }

  /** Users online and rates now: a report's figures, and a heartbeat's load. */
  function measureLoad(): { usersOnline: number; rxBps: number; txBps: number } {
    const serving = listening() && !faults.serviceDown;
    const noise = (spread: number) => 1 + (random() * 2 - 1) * spread;
    // A few of its users offline at a time, never more online than it has.
    const online = serving ? Math.max(0, Math.min(users, Math.round(users * noise(0.02)))) : 0;
    const base = Math.min(opts.capacityBps, online * perUserBps * noise(0.15));
    const txBps = Math.max(0, Math.min(opts.capacityBps, Math.round(base)));
    const rxBps = Math.max(0, Math.min(opts.capacityBps, Math.round(base * 0.85 * noise(0.1))));
    return { usersOnline: online, rxBps, txBps };
  }

  async function buildReport(): Promise<AgentReport> {
    const checks: NeighbourCheck[] = await Promise.all(
      neighbours
        .filter((n) => n.serverId !== opts.serverId)
        .map(async (n) => {
          if (network.isBlocked(opts.serverId, n.serverId)) return { serverId: n.serverId, ok: false, rttMs: null };
          const r = await tcpCheck(n.host, n.port, neighbourTimeoutMs);
          return { serverId: n.serverId, ok: r.ok, rttMs: r.rttMs };
        }),
    );
    const { usersOnline: online, rxBps, txBps } = measureLoad();
    const traffic = userTraffic(online, rxBps, txBps);
    const load = opts.capacityBps > 0 ? txBps / opts.capacityBps : 0;
    const cpu = Math.min(100, Math.max(0, 2 + 85 * load + 3 * random()));
    const memory = Math.min(100, Math.max(0, 18 + (40 * online) / (online + 500) + 2 * random()));
    return {
      listenerAlive: listening(),
      serviceRunning: !faults.serviceDown,
      usersOnline: online,
      rxBps,
      txBps,
      cpu: Math.round(cpu * 10) / 10,
      memory: Math.round(memory * 10) / 10,
      neighbours: checks,
      sentAt: new Date().toISOString(),
      ...traffic,
    };
  }

  /**
   * The traffic of the users online since the last report that carried any: the first `online`
   * of the known users, each with an even share of the rates over the time since (the first
   * report: one interval). Nothing without known users (setUsers alone).
   */
  function userTraffic(online: number, rxBps: number, txBps: number): Pick<AgentReport, "instance" | "seq" | "users"> {
    const nowMs = Date.now();
    const elapsedS = Math.max(0, (lastTrafficAtMs === null ? opts.reportIntervalMs : nowMs - lastTrafficAtMs) / 1000);
    const active = userIds.slice(0, Math.min(online, userIds.length));
    if (active.length === 0) return {};
    lastTrafficAtMs = nowMs;
    const down = Math.round((txBps / active.length / 8) * elapsedS);
    const up = Math.round((rxBps / active.length / 8) * elapsedS * 0.1);
    return { instance, seq: ++seq, users: active.map((email) => ({ email, up, down })) };
  }

  async function reportNow(): Promise<ReportAttempt> {
    if (!listening() && !faults.listenerDown) {
      // a listener failed to come back (port taken): try again
      await openListeners().catch(() => {});
    }
    const report = await buildReport();
    lastReport = report;
    if (!opts.reportUrl) return { ok: false, error: "no report URL", report };
    try {
      const res = await fetch(opts.reportUrl, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${opts.token}` },
        body: JSON.stringify(report),
        signal: AbortSignal.timeout(reportTimeoutMs),
      });
      await res.arrayBuffer().catch(() => undefined);
      lastReportStatus = res.status;
      if (res.ok) {
        reportsSent++;
        lastReportError = null;
        return { ok: true, status: res.status, report };
      }
      reportsFailed++;
      lastReportError = `HTTP ${res.status}`;
      return { ok: false, status: res.status, error: lastReportError, report };
    } catch (err) {
      reportsFailed++;
      lastReportError = (err as Error)?.message ?? String(err);
      return { ok: false, error: lastReportError, report };
    }
  }

  function scheduleReport(delayMs: number): void {
    if (stopped) return;
    reportTimer = setTimeout(async () => {
      reportTimer = null;
      if (stopped) return;
      const t0 = Date.now();
      if (!faults.stopReporting) {
        reporting = reportNow();
        await reporting;
        reporting = null;
      }
      scheduleReport(Math.max(0, opts.reportIntervalMs - (Date.now() - t0)));
    }, delayMs);
  }

  async function heartbeatNow(withLoad: boolean): Promise<boolean> {
    if (!opts.heartbeatUrl) return false;
    const body: HeartbeatBody | null = withLoad ? { load: measureLoad() } : null;
    try {
      const res = await fetch(opts.heartbeatUrl, {
        method: "POST",
        headers: { authorization: `Bearer ${opts.token}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(Math.max(100, heartbeatIntervalMs)),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.ok) heartbeatsSent++;
      else heartbeatsFailed++;
      return res.ok;
    } catch {
      heartbeatsFailed++;
      return false;
    }
  }

  /** On its own timer, as the agent's: a slow report never delays a heartbeat. */
  function scheduleHeartbeat(delayMs: number, lastLoadMs: number): void {
    if (stopped || !opts.heartbeatUrl) return;
    heartbeatTimer = setTimeout(async () => {
      heartbeatTimer = null;
      if (stopped) return;
      const t0 = Date.now();
      let loadAt = lastLoadMs;
      if (!faults.stopReporting) {
        const withLoad = t0 - lastLoadMs >= loadIntervalMs;
        if (withLoad) loadAt = t0;
        heartbeating = heartbeatNow(withLoad);
        await heartbeating;
        heartbeating = null;
      }
      scheduleHeartbeat(Math.max(0, heartbeatIntervalMs - (Date.now() - t0)), loadAt);
    }, delayMs);
  }

  await openListeners();
  scheduleReport(opts.reportOnStart === false ? opts.reportIntervalMs : 0);
  // The first heartbeat carries a load: the balancer sees the server's figures at once.
  scheduleHeartbeat(0, -Infinity);

  const self: SimServer = {
    serverId: opts.serverId,
    get inboundPorts() {
      return [...ports];
    },
    get healthPort() {
      return healthPort;
    },
    setUsers(n: number) {
      users = Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
    },
    setUserIds(ids: readonly string[]) {
      userIds = [...ids];
      users = userIds.length;
    },
    setNeighbours(n: SimNeighbour[]) {
      neighbours = [...n];
    },
    async setFault(fault: SimFault, on: boolean, args: SimFaultArgs = {}) {
      switch (fault) {
        case "listenerDown":
          faults.listenerDown = on;
          if (on) await closeListeners();
          else if (!stopped) await openListeners();
          return;
        case "firewalled":
          faults.firewalled = on;
          if (on) await Promise.all(inbound.map(closeListener));
          else if (!stopped && !faults.listenerDown) await openListeners();
          return;
        case "serviceDown":
          faults.serviceDown = on;
          return;
        case "stopReporting":
          // The agent is silent: no reports and no heartbeats (the fast path's loss of it).
          faults.stopReporting = on;
          return;
        case "unreachableFrom": {
          const observers = args.observers ?? neighbours.map((n) => n.serverId);
          if (on) network.block(opts.serverId, observers);
          else network.unblock(opts.serverId, args.observers);
          faults.unreachableFrom = network.blockedObservers(opts.serverId);
          return;
        }
        case "slow":
          faults.slowMs = on ? Math.max(0, args.ms ?? 5000) : 0;
          return;
        default: {
          const never: never = fault;
          throw new Error(`unknown fault ${String(never)}`);
        }
      }
    },
    async clearFaults() {
      await self.setFault("unreachableFrom", false);
      await self.setFault("slow", false);
      await self.setFault("stopReporting", false);
      await self.setFault("serviceDown", false);
      await self.setFault("listenerDown", false);
      await self.setFault("firewalled", false);
    },
    buildReport,
    reportNow,
    heartbeatNow,
    state(): SimServerState {
      return {
        serverId: opts.serverId,
        inboundPorts: [...ports],
        healthPort,
        listening: listening(),
        users,
        faults: { ...faults, unreachableFrom: [...faults.unreachableFrom] },
        reportsSent,
        reportsFailed,
        heartbeatsSent,
        heartbeatsFailed,
        healthRequestsHeld: pendingSlow.size,
        lastReportStatus,
        lastReportError,
        lastReport,
        neighbours: [...neighbours],
      };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (reportTimer) clearTimeout(reportTimer);
      reportTimer = null;
      if (heartbeatTimer) clearTimeout(heartbeatTimer);
      heartbeatTimer = null;
      network.unblock(opts.serverId);
      await closeListeners();
      await reporting?.catch(() => {});
      await heartbeating?.catch(() => {});
    },
  };
  return self;
}
