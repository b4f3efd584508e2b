import net from "node:net";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eq, inArray } from "drizzle-orm";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { clusters, inbounds, serverHealth, servers } from "@/db/schema";
import { hashAgentToken } from "@/server/auth/tokens";
import { onChange } from "@/server/bus";
import { TestReportIntake } from "@/server/dataplane/report-testing";
import { sweepStatuses } from "./status";
import { agentReport } from "./testing";
import { recordHeartbeats } from "./heartbeat";
import { FailoverWatcher, tcpConnect } from "./failover";
import { fastProbeTargets } from "./service";

/** A real loopback listener that can be closed (the server's inbound dying) and reopened. */
class Port {
  private srv: net.Server | null = null;
  port = 0;
  async open(): Promise<void> {
    this.srv = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => this.srv!.listen(this.port, "127.0.0.1", r));
    this.port = (this.srv.address() as net.AddressInfo).port;
  }
  async close(): Promise<void> {
    const s = this.srv;
    this.srv = null;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

describe.each(testDbKinds())("failover watcher (%s)", (kind) => {
  let t: TestDatabase;
  const ids: string[] = [];
  const ports: Port[] = [];
  let clock = 0;
  let probes: Array<Promise<boolean>> = [];
  let watcher: FailoverWatcher;
  const healthEvents: string[] = [];
  let off: () => void;
  let intake: TestReportIntake;

  const status = async (i: number) => (await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[i]!)))[0]!.status;
  const beat = (which: number[], at = clock) => recordHeartbeats(t.db, new Map(which.map((i) => [ids[i]!, at])));
  /** One tick, then the fast probes it started (real TCP connects), then one more tick. */
  const tickAndProbe = async () => {
    const first = await watcher.tick();
    await Promise.all(probes.splice(0));
    return first;
  };

  /** Real cadence: a tick (and its probes) every 500 ms while `beating` send heartbeats; stops early when `until` says so. */
  const advance = async (ms: number, beating: number[], until?: (confirmed: string[]) => boolean) => {
    for (let done = 0; done < ms; done += 500) {
      clock += 500;
      if (beating.length) await beat(beating);
      const tick = await tickAndProbe();
      if (until?.(tick.confirmed)) return tick;
    }
    return null;
  };

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    off = onChange((e) => {
      if (e.kind === "health") healthEvents.push(e.clusterId ?? "");
    });
    const [c] = await t.db.insert(clusters).values({ name: "failover", reportIntervalS: 60 }).returning();
    intake = await TestReportIntake.start(t);
    for (let i = 0; i < 4; i++) {
      const token = `tok-${i}-${randomUUID()}`;
      const [s] = await t.db.insert(servers).values({ clusterId: c!.id, name: `s${i}`, address: "127.0.0.1", agentTokenHash: hashAgentToken(token) }).returning();
      ids.push(s!.id);
      const p = new Port();
      await p.open();
      ports.push(p);
      await t.db.insert(inbounds).values({ clusterId: c!.id, serverId: s!.id, name: `in${i}`, port: p.port });
      // A healthy report: the server is in rotation.
      expect((await intake.send(`Bearer ${token}`, JSON.stringify(agentReport()))).httpStatus).toBe(200);
    }
  });
  afterAll(async () => {
    await intake?.close();
    off?.();
    for (const p of ports) await p.close();
    await t?.dispose();
  });

  beforeEach(async () => {
    for (const p of ports) if (p.port) await p.close().then(() => p.open());
    clock = Date.now();
    probes = [];
    healthEvents.length = 0;
    watcher = new FailoverWatcher({
      db: t.db,
      now: () => clock,
      targets: () => fastProbeTargets(t.db),
      probe: (target) => {
        const p = tcpConnect(target, 500);
        probes.push(p);
        return p;
      },
    });
    // Servers 0-2 send heartbeats; server 3 never does (an older agent).
    await t.db.update(serverHealth).set({ heartbeatAt: null, heartbeatLostAt: null }).where(inArray(serverHealth.serverId, ids));
    await beat([0, 1, 2]);
    await watcher.tick();
    for (let i = 0; i < 4; i++) expect(await status(i)).toBe("healthy");
  });

  it("a dead server (heartbeats stop, port refuses) is out of rotation once suspect and three fast probes failed", async () => {
    const lastBeat = clock;
    await ports[0]!.close();
    const tick = await advance(10_000, [1, 2], (c) => c.length > 0);
    expect(tick).toMatchObject({ blind: false, heartbeating: 3, silent: 1, confirmed: [ids[0]] });
    const silence = clock - lastBeat;
    expect(silence).toBeGreaterThan(6000); // never before the suspect window
    console.log(`failover watcher: confirmed after ${silence} ms of silence (simulated clock)`);
    expect(await status(0)).toBe("no-data");
    expect(healthEvents.length).toBeGreaterThan(0); // the snapshot is told at once
    // The slow path's sweep keeps the verdict; the other servers (and the one without heartbeats) stay.
    await sweepStatuses(t.db, clock);
    expect(await status(0)).toBe("no-data");
    for (const i of [1, 2, 3]) expect(await status(i)).toBe("healthy");
    // A heartbeat brings it back at once.
    await ports[0]!.open();
    clock += 500;
    expect((await beat([0])).size).toBe(1);
    expect(await status(0)).toBe("healthy");
    const [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[0]!));
    expect(h!.heartbeatLostAt).toBeNull(); // cleared: later heartbeats recompute nothing
    clock += 2000;
    expect((await beat([0])).size).toBe(0);
  });

  it("a server whose active probe the operator turned off is never confirmed (no evidence but silence)", async () => {
    await t.db.update(servers).set({ probeOverride: { enabled: false } }).where(eq(servers.id, ids[0]!));
    try {
      await ports[0]!.close();
      expect(await advance(12_000, [1, 2], (c) => c.length > 0)).toBeNull();
      expect(await status(0)).toBe("healthy");
    } finally {
      await t.db.update(servers).set({ probeOverride: null }).where(eq(servers.id, ids[0]!));
    }
  });

  it("a busy machine whose heartbeats are late but whose port answers is never marked down", async () => {
    expect(await advance(20_000, [1, 2], (c) => c.length > 0)).toBeNull();
    expect(await status(0)).toBe("healthy");
  });

  it("one probe timeout on a healthy server with lost heartbeats is not enough", async () => {
    await advance(6000, [1, 2]);
    await ports[0]!.close();
    expect(await advance(500, [1, 2], (c) => c.length > 0)).toBeNull(); // one fast probe fails
    await ports[0]!.open(); // the glitch is over
    expect(await advance(5000, [1, 2], (c) => c.length > 0)).toBeNull();
    expect(await status(0)).toBe("healthy");
  });

  it("the panel losing its network (every heartbeat and probe lost at once) marks nothing down, and nothing after it returns", async () => {
    for (const p of ports) await p.close();
    for (let k = 0; k < 10; k++) {
      clock += 1000;
      const tick = await tickAndProbe();
      if (k >= 3) expect(tick.blind).toBe(true);
    }
    for (let i = 0; i < 4; i++) expect(await status(i)).toBe("healthy");
    // The network returns: heartbeats arrive one after the other, the ports answer again.
    for (const p of ports) await p.open();
    await beat([0]);
    await tickAndProbe();
    await beat([1, 2]);
    clock += 1000;
    await tickAndProbe();
    clock += 500;
    expect((await watcher.tick()).confirmed).toEqual([]);
    for (let i = 0; i < 4; i++) expect(await status(i)).toBe("healthy");
  });

  it("a stalled panel (event loop paused 20 s) gives the queued heartbeats a grace window", async () => {
    await ports[0]!.close();
    await ports[1]!.close();
    clock += 20_000; // nothing ticked meanwhile
    await beat([2]);
    const tick = await tickAndProbe();
    expect(tick.blind).toBe(true);
    await beat([0, 1, 2]); // the queued heartbeats are read
    clock += 1000;
    expect((await tickAndProbe()).confirmed).toEqual([]);
    for (let i = 0; i < 3; i++) expect(await status(i)).toBe("healthy");
  });

  it("a panel that restarts finds every stored heartbeat old: blind until they resume", async () => {
    await ports[0]!.close();
    clock += 30_000; // the panel was down; servers 1 and 2 are fine but could not tell it
    await beat([1]); // only one has come back yet: 2 of 3 silent would be blind anyway; 1 of 3 is not
    await beat([2]);
    const first = new Promise<import("./failover").WatchTick>((r) => (watcher.onTick = r));
    watcher.start();
    const tick = await first;
    await watcher.stop();
    expect(tick.blind).toBe(true);
    expect(tick.confirmed).toEqual([]);
  });

  it("a heartbeat that arrives at the last moment wins", async () => {
    await ports[0]!.close();
    await advance(6000, [1, 2]); // two failed probes, not yet suspect
    clock += 500;
    await beat([1, 2]);
    await beat([0], clock - 1); // a heartbeat 1 ms ago: no longer suspect
    expect((await watcher.tick()).confirmed).toEqual([]);
    expect(await status(0)).toBe("healthy");
  });
});
