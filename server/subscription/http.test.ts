import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { clusters, subscribers } from "@/db/schema";
import { publishChange } from "@/server/bus";
import { startTestApp, type TestApp } from "@/server/api/http-testing";
import { seedDemoCluster } from "@/server/demo/seed";
import { publicOrigin } from "./http";

const req = (headers: Record<string, string>) => ({ headers, socket: {} }) as unknown as IncomingMessage;

describe("the origin of the subscriber's page (no PUBLIC_URL in tests)", () => {
  it("is the request's host", () => {
    expect(publicOrigin(req({ host: "panel.test:8080" }))).toBe("http://panel.test:8080");
    expect(publicOrigin(req({ host: "[2001:db8::1]:3000" }))).toBe("http://[2001:db8::1]:3000");
  });
  it("never echoes a host that is not a plain host[:port]", () => {
    expect(publicOrigin(req({ host: 'evil"><script>x</script>' }))).toBe("http://localhost");
    expect(publicOrigin(req({ host: "a.test/path" }))).toBe("http://localhost");
    expect(publicOrigin(req({}))).toBe("http://localhost");
  });
  it("ignores X-Forwarded-Host without TRUST_PROXY", () => {
    expect(publicOrigin(req({ host: "panel.test", "x-forwarded-host": "other.test", "x-forwarded-proto": "https" }))).toBe("http://panel.test");
  });
});

describe("GET /sub/<token> over HTTP", () => {
  let app: TestApp;
  let token: string;
  beforeAll(async () => {
    app = await startTestApp({ devtools: false });
    const clusterId = await seedDemoCluster(app.database.db, "Internal fleet");
    // profile-title is the brand's title (issue 25 point 7), not the cluster's name.
    await app.database.db.update(clusters).set({ branding: { title: "Café ☕", showSubscriberName: false } }).where(eq(clusters.id, clusterId));
    publishChange("settings", clusterId);
    token = (await app.database.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).limit(1))[0]!.token;
  });
  afterAll(async () => {
    await app?.close();
  });

  it("sends each format's body byte for byte: share links (ASCII) and the others with non-ASCII names", async () => {
    for (const format of ["base64", "json", "clash", "singbox"]) {
      const res = await fetch(`${app.url}/sub/${token}?format=${format}`);
      expect(res.status).toBe(200);
      const bytes = Buffer.from(await res.arrayBuffer());
      const expected = await app.subscriptions.answer(token, format);
      expect(expected.body).not.toContain("Internal fleet");
      expect(bytes.equals(Buffer.from(expected.body, "utf8"))).toBe(true);
      // Sent with its length, not in chunks.
      expect(res.headers.get("content-length")).toBe(String(bytes.length));
      expect(res.headers.get("transfer-encoding")).toBeNull();
      expect(res.headers.get("profile-title")).toBe(`base64:${Buffer.from("Café ☕").toString("base64")}`);
    }
    const links = Buffer.from(await (await fetch(`${app.url}/sub/${token}`)).text(), "base64").toString("utf8");
    expect(links.split("\n")[0]).toMatch(/^vless:\/\//);
    const json = (await (await fetch(`${app.url}/sub/${token}?format=json`)).json()) as { routes: Array<{ route: string }> };
    expect(json.routes.map((r) => r.route)).toContain("🇺🇸 USA");
  });

  it("gives a browser the page in its language, from Accept-Language", async () => {
    const res = await fetch(`${app.url}/sub/${token}`, { headers: { "user-agent": "Mozilla/5.0 Chrome/140", "accept-language": "zh-CN,zh;q=0.9" } });
    const html = await res.text();
    expect(html).toContain('<html lang="zh" dir="ltr">');
    expect(html).toContain("添加到应用");
    expect(html).toContain("<h1>Café ☕</h1>");
    expect(html).not.toContain("Internal fleet");
    expect(res.headers.get("vary")).toBe("User-Agent, Accept-Language");
  });

  it("answers HEAD with the headers and no body", async () => {
    const res = await fetch(`${app.url}/sub/${token}`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect((await res.arrayBuffer()).byteLength).toBe(0);
    // The length the GET body has.
    const body = Buffer.from(await (await fetch(`${app.url}/sub/${token}`)).arrayBuffer());
    expect(res.headers.get("content-length")).toBe(String(body.length));
  });
});
