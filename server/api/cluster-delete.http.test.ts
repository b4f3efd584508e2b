/**
 * Deleting a cluster (issue 27, point 4) through the real listener: who may, the typed name,
 * what goes with it, and what its agents and subscribers get afterwards. A real agent process
 * (agent/main.ts with Debian's v2ray) runs against the cluster and must stop on its own, once.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { auditLog, clusters, servers, subscribers } from "@/db/schema";
import { UNAUTHORIZED_MESSAGE } from "@/agent/panel";
import { startTestApp, trpcHttp, type TestApp } from "./http-testing";

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

describe("clusters.delete over HTTP", () => {
  let app: TestApp;
  let admin: string;
  let viewer: string;
  let doomed: { id: string; name: string };
  let kept: { id: string; name: string };
  let agentToken: string;
  let keptAgentToken: string;
  let subToken: string;
  let keptSubToken: string;
  const call = (cookie: string, type: "query" | "mutation", p: string, input: unknown) => trpcHttp(app, cookie, type, p, input);
  const data = <T>(r: Awaited<ReturnType<typeof trpcHttp>>) => r.body.result?.data?.json as T;

  beforeAll(async () => {
    app = await startTestApp({ devtools: false });
    admin = await app.cookie("admin");
    viewer = await app.cookie("viewer");
    const make = async (name: string) => {
      const c = data<{ id: string; name: string }>(await call(admin, "mutation", "clusters.create", { name }));
      const s = data<{ id: string; agentToken: string }>(
        await call(admin, "mutation", "servers.create", { clusterId: c.id, name: `${name}-1`, address: "192.0.2.7", role: "node", coefficient: 1, capacityMbps: null, enabled: true }),
      );
      await call(admin, "mutation", "inbounds.create", { serverId: s.id, name: `${name} in`, port: 8443, security: "none", sni: null });
      const u = data<{ token: string }>(await call(admin, "mutation", "subscribers.create", { clusterId: c.id, name: "alice", expiresAt: null, trafficLimitGb: null }));
      return { cluster: c, agentToken: s.agentToken, subToken: u.token };
    };
    const a = await make("Doomed");
    const b = await make("Kept");
    ({ cluster: doomed, agentToken, subToken } = a);
    ({ cluster: kept, agentToken: keptAgentToken, subToken: keptSubToken } = b);
  });
  afterAll(async () => {
    await app?.close();
  });

  const agentConfigStatus = async (token: string) => (await fetch(`${app.url}/api/agent/config`, { headers: { authorization: `Bearer ${token}` } })).status;
  const subStatus = async (token: string) => (await fetch(`${app.url}/sub/${token}?format=json`)).status;
  const count = async (table: typeof servers | typeof subscribers, clusterId: string) => (await app.database.db.select().from(table).where(eq(table.clusterId, clusterId))).length;

  it("lists what goes: servers, inbounds, routes and subscribers", async () => {
    const r = await call(viewer, "query", "clusters.deletionImpact", { clusterId: doomed.id });
    expect(data(r)).toEqual({ id: doomed.id, name: "Doomed", servers: 1, inbounds: 1, routes: 1, subscribers: 1 });
  });

  it("refuses viewers and a name that is not the cluster's, naming the field, and changes nothing", async () => {
    const byViewer = await call(viewer, "mutation", "clusters.delete", { clusterId: doomed.id, confirmName: "Doomed" });
    expect(byViewer.status).toBe(403);
    const wrong = await call(admin, "mutation", "clusters.delete", { clusterId: doomed.id, confirmName: "Kept" });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error?.json?.data?.fieldErrors?.confirmName).toMatch(/Type the cluster's name, Doomed/);
    const missing = await call(admin, "mutation", "clusters.delete", { clusterId: doomed.id });
    expect(missing.status).toBe(400);
    expect(missing.body.error?.json?.message).toMatch(/^confirmName:/);
    expect(await count(servers, doomed.id)).toBe(1);
    expect(await agentConfigStatus(agentToken)).toBe(200);
    expect(await subStatus(subToken)).toBe(200);
  });

  it("deletes everything in it in one go: its agent stops on its own with one line, its links 404, the other cluster is untouched", async () => {
    // A real agent on the doomed cluster's server, running until the panel refuses its token.
    const stateDir = mkdtempSync(path.join(os.tmpdir(), "rb-deleted-agent-"));
    const agent = spawn(
      process.execPath,
      ["--import", "tsx", path.resolve("agent/main.ts"), "--core", "v2ray", "--state-dir", stateDir, "--api-port", String(await freePort())],
      { env: { ...process.env, ROUTEBOARD_URL: app.url, ROUTEBOARD_AGENT_TOKEN: agentToken }, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    agent.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((resolve) => agent.once("close", resolve));
    try {
      // It holds the panel's config (and runs its core) before the cluster goes.
      await expect.poll(() => existsSync(path.join(stateDir, "panel-config.json")), { timeout: 60_000 }).toBe(true);

      const r = await call(admin, "mutation", "clusters.delete", { clusterId: doomed.id, confirmName: " Doomed " });
      expect(r.status).toBe(200);
      expect(data(r)).toMatchObject({ name: "Doomed", servers: 1, subscribers: 1, routes: 1 });
      expect(await app.database.db.select().from(clusters).where(eq(clusters.id, doomed.id))).toEqual([]);
      expect(await count(servers, doomed.id)).toBe(0);
      expect(await count(subscribers, doomed.id)).toBe(0);
      const [entry] = await app.database.db.select().from(auditLog).where(and(eq(auditLog.action, "cluster.delete"), eq(auditLog.entityId, doomed.id)));
      expect(entry?.summary).toBe("Deleted cluster Doomed with 1 servers, 1 inbounds, 1 routes and 1 subscribers");
      expect(entry?.operatorName).toBe("http-admin");

      expect(await exited).toBe(3);
      const notInfo = stderr
        .trim()
        .split("\n")
        .filter((l) => !l.includes(" info: "));
      expect(notInfo).toEqual([`routeboard-agent: ${UNAUTHORIZED_MESSAGE}`]);

      expect(await agentConfigStatus(agentToken)).toBe(401);
      const report = await fetch(`${app.url}/api/agent/report`, { method: "POST", headers: { authorization: `Bearer ${agentToken}`, "content-type": "application/json" }, body: "{}" });
      expect(report.status).toBe(401);
      await expect.poll(() => subStatus(subToken)).toBe(404);

      expect(await agentConfigStatus(keptAgentToken)).toBe(200);
      expect(await subStatus(keptSubToken)).toBe(200);
      expect(data<Array<{ name: string }>>(await call(admin, "query", "clusters.list", undefined)).map((c) => c.name)).toEqual([kept.name]);
    } finally {
      if (agent.exitCode === null) agent.kill("SIGTERM");
      await exited;
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 120_000);

  it("answers NOT_FOUND for a cluster that is gone", async () => {
    const r = await call(admin, "mutation", "clusters.delete", { clusterId: doomed.id, confirmName: "Doomed" });
    expect(r.status).toBe(404);
  });
});
