/**
 * Issue 26 with real parts, all on loopback: the panel's agent routes on a test database, one
 * real agent driving Debian's v2ray 4.34 as the server core for five inbounds (VMess over ws,
 * VMess over tcp+TLS, Trojan over tcp+TLS, VLESS over ws+TLS, VLESS over h2+TLS; a throwaway
 * certificate made by openssl), and clients built from the subscription's own links: one v2ray
 * process with an outbound per link, and Debian's `trojan` for the Trojan link. Each carries a
 * fetch of a local target, and the subscriber's usage grows by what was fetched; a credential
 * the panel never gave out is refused on every protocol; what v2ray cannot serve (gRPC,
 * Shadowsocks) is reported not served, saying which core it needs.
 * Lives in scripts/ because it joins the panel (server/) and the agent (agent/).
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { eq } from "drizzle-orm";
import { serverAgentState, subscribers } from "@/db/schema";
import { adminAndViewer } from "@/server/api/testing";
import { serveAgentRoutes, type AgentRoutesServer } from "@/server/dataplane/agent-http-testing";
import { agentConfigHandler } from "@/server/dataplane/config-http";
import { agentReportHandler } from "@/server/dataplane/report-http";
import { reportBatcher } from "@/server/dataplane/report-batcher";
import { getDb } from "@/server/db";
import { SubscriptionService } from "@/server/subscription/service";
import { foldTrafficJournal } from "@/server/usage/journal";
import { Agent } from "@/agent/agent";
import { CoreManager } from "@/agent/core-manager";
import { Delivery } from "@/agent/delivery";
import { memoryLog } from "@/agent/log";
import { PanelClient } from "@/agent/panel";
import { STATE_FILES } from "@/agent/state";
import { makeCert, requireV2ray, startHttpTarget, tempDir } from "@/agent/test-support";
import { fetchViaSocks, freePort } from "@/e2e/vless-client";
import { parseShareLink, startTrojanClient, startV2rayLinksClient, type Client, type ShareLink } from "@/e2e/share-link-client";

const TLS_CASES = ["VMess tcp TLS", "Trojan tcp TLS", "VLESS ws TLS", "VLESS h2 TLS"];
const CASES = ["VMess ws", ...TLS_CASES];
/** Large enough that protocol overhead and headers are noise in the usage it adds. */
const BODY = "routeboard-protocols-".repeat(5000);

describe("VMess, Trojan and VLESS over tcp, ws and h2 through a real agent and v2ray", () => {
  let app: AgentRoutesServer;
  let service: SubscriptionService;
  let agent: Agent;
  let target: Awaited<ReturnType<typeof startHttpTarget>>;
  let dir: string;
  let caFile: string;
  let serverId: string;
  let alice: { id: string; token: string };
  const unserved: Record<string, string> = {};
  const links = new Map<string, ShareLink>();
  const clients: Client[] = [];
  const log = memoryLog();

  beforeAll(async () => {
    const bins = { kind: "v2ray" as const, ...requireV2ray() };
    dir = tempDir("protocols-");
    const cert = makeCert(dir);
    caFile = cert.certFile;
    target = await startHttpTarget(BODY);
    app = await serveAgentRoutes("pglite", { "/api/agent/config": agentConfigHandler, "/api/agent/report": agentReportHandler });
    const { admin } = await adminAndViewer(app.t.db);
    const clusterId = (await admin.clusters.create({ name: "protocols" })).id;
    await admin.monitoring.setReportInterval({ clusterId, seconds: 10 });
    // The target is on the server's loopback: reachable only because the cluster allows it.
    await admin.clusters.setAllowedPrivateDestinations({ clusterId, destinations: [new URL(target.url).host] });
    const server = await admin.servers.create({ clusterId, name: "local", address: "127.0.0.1" });
    serverId = server.id;
    const tls = { security: "tls" as const, sni: "localhost", tlsCertificateFile: cert.certFile, tlsKeyFile: cert.keyFile };
    const inbounds = {
      "VMess ws": { protocol: "vmess", transport: "ws", path: "/vm", security: "none", sni: null },
      "VMess tcp TLS": { protocol: "vmess", ...tls },
      "Trojan tcp TLS": { protocol: "trojan", ...tls },
      "VLESS ws TLS": { protocol: "vless", transport: "ws", path: "/vl", host: "localhost", ...tls },
      "VLESS h2 TLS": { protocol: "vless", transport: "h2", path: "/h2", ...tls },
      "VLESS gRPC TLS": { protocol: "vless", transport: "grpc", serviceName: "tun", ...tls },
      "SS 2022": { protocol: "shadowsocks", ssMethod: "2022-blake3-aes-128-gcm", security: "none", sni: null },
    } as const;
    for (const [name, fields] of Object.entries(inbounds)) {
      // One route per inbound, so the subscription hands out every one of them.
      const route = await admin.routes.create({ clusterId, name });
      await admin.inbounds.create({ serverId: server.id, routeId: route.id, name, port: await freePort(), ...fields });
    }
    alice = await admin.subscribers.create({ clusterId, name: "alice" });

    const stateDir = path.join(dir, "agent");
    fs.mkdirSync(stateDir);
    const core = new CoreManager({ bins, stateDir, apiPort: await freePort(), log, onCoreExit: () => agent?.coreExited(), beforeRestart: async () => agent?.drainCounters() });
    agent = new Agent({ panel: new PanelClient(app.base, server.agentToken, "test"), core, delivery: new Delivery(path.join(stateDir, STATE_FILES.delivery)), log, stateDir, coreVersion: "V2Ray 4.34.0", agentVersion: "test", reportIntervalOverrideS: 1, configWaitS: 5, minBackoffMs: 100, maxBackoffMs: 300 });
    agent.run().catch(() => {});
    // The first report says what the core serves; the subscription then hands out the rest.
    const reported = async () => (await app.t.db.select().from(serverAgentState).where(eq(serverAgentState.serverId, serverId)))[0]?.unservedInbounds;
    await vi.waitUntil(async () => (((await reported()) as unknown[] | null | undefined)?.length ?? 0) === 2, { timeout: 30_000, interval: 200 });
    service = new SubscriptionService(app.t.db);
    service.start();
    const handedOut = async () => {
      await service.refresh();
      const a = await service.answer(alice.token, "json");
      const routes = (JSON.parse(a.body) as { routes: Array<{ inbound: string; link: string }> }).routes;
      for (const r of routes) links.set(r.inbound, parseShareLink(r.link));
      return routes.map((r) => r.inbound).sort();
    };
    await vi.waitUntil(async () => JSON.stringify(await handedOut()) === JSON.stringify([...CASES].sort()), { timeout: 30_000, interval: 200 });
    for (const u of ((await reported()) ?? []) as Array<{ inboundId: string; reason: string }>) unserved[u.inboundId] = u.reason;
  });

  afterAll(async () => {
    for (const c of clients) await c.stop().catch(() => {});
    await agent?.stop().catch(() => {});
    await service?.stop();
    await target?.close();
    // The batcher's fold timers would otherwise run on against the closed database.
    await reportBatcher(getDb).stop();
    await app?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const usedBytes = async () => {
    await foldTrafficJournal(app.t.db);
    const [row] = await app.t.db.select().from(subscribers).where(eq(subscribers.id, alice.id));
    return row!.trafficUsedBytes;
  };

  it("carries a fetch through every link, and the subscriber's usage grows by what was fetched", async () => {
    const client = await startV2rayLinksClient(CASES.map((c) => links.get(c)!), caFile);
    clients.push(client);
    const before = await usedBytes();
    for (const [k, name] of CASES.entries()) {
      const r = await fetchViaSocks(client.socksPorts[k]!, target.url).catch((err: Error) => ({ status: 0, body: `${name}: ${err.message}\n${client.output()}` }));
      expect(r.status, `${name}: ${r.body.slice(0, 500)}`).toBe(200);
      expect(r.body).toBe(BODY);
    }
    // The core counts the body on the way down, once per link; reports arrive every second.
    await expect.poll(usedBytes).toBeGreaterThanOrEqual(before + CASES.length * BODY.length);
  });

  it("the Trojan link works through Debian's trojan client too", async () => {
    const trojan = await startTrojanClient(links.get("Trojan tcp TLS")!, caFile);
    clients.push(trojan);
    const before = await usedBytes();
    const r = await fetchViaSocks(trojan.socksPorts[0]!, target.url);
    expect(r.status, trojan.output()).toBe(200);
    expect(r.body).toBe(BODY);
    await expect.poll(usedBytes).toBeGreaterThanOrEqual(before + BODY.length);
  });

  it("refuses a credential the panel never gave out, on every protocol", async () => {
    // Each link with another UUID (VLESS, VMess) or password (Trojan) in place of alice's.
    const strangers = CASES.map((c) => ({ ...links.get(c)!, credential: links.get(c)!.protocol === "trojan" ? "f".repeat(32) : randomUUID() }));
    const client = await startV2rayLinksClient(strangers, caFile);
    clients.push(client);
    // A refused client sees its connection closed, or (VMess drains a stranger's connection
    // so probes learn nothing) no answer for as long as it waits: it gets a few seconds.
    const outcomes = await Promise.all(
      CASES.map(async (name, k) => {
        const fetched = fetchViaSocks(client.socksPorts[k]!, `${target.url}?stranger=${k}`).then(
          (r) => `answered ${r.status}`,
          () => "refused",
        );
        let timer: NodeJS.Timeout | undefined;
        const silence = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("no answer"), 5000)));
        const outcome = await Promise.race([fetched, silence]);
        clearTimeout(timer);
        return `${name}: ${outcome === "answered 200" ? outcome : "refused"}`;
      }),
    );
    expect(outcomes).toEqual(CASES.map((name) => `${name}: refused`));
    // A slow machine could make a wrongly accepted stranger look silent: alice's own fetches
    // through the same inbounds, sent after the strangers', must arrive while no stranger's
    // request ever reached the target.
    const alice = clients[0]!;
    for (const [k, name] of CASES.entries()) {
      const r = await fetchViaSocks(alice.socksPorts[k]!, `${target.url}?alice=${k}`);
      expect(r.status, name).toBe(200);
    }
    await client.stop();
    expect(target.paths.filter((p) => p.includes("stranger="))).toEqual([]);
  });

  it("reports what v2ray 4.34 cannot serve, saying which core it needs", () => {
    expect(Object.values(unserved).sort()).toEqual([
      "Shadowsocks with one key per subscriber needs Xray-core: v2ray 4.x serves one user only (run the agent with --core xray)",
      "gRPC needs Xray-core: v2ray 4.34 cannot serve it (run the agent with --core xray)",
    ]);
    expect(log.lines.some((l) => l.includes("VLESS gRPC TLS") && l.includes("gRPC needs Xray-core"))).toBe(true);
  });
});
