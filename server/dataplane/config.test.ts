import { describe, expect, it } from "vitest";
import { MAX_NEIGHBOURS, agentInboundSchema, type AgentNeighbour } from "@/core/agent-wire";
import { mayConnect } from "@/server/usage/access";
import { canonicalJson } from "@/core/config-version";
import { agentInbound, neighboursOf } from "./config";
import { replaceUsers } from "./user-list";

const base = {
  id: "11111111-1111-4111-8111-111111111111",
  clusterId: "22222222-2222-4222-8222-222222222222",
  serverId: "33333333-3333-4333-8333-333333333333",
  routeId: null,
  name: "in",
  port: 443,
  protocol: "vless",
  security: "reality" as const,
  sni: "www.example.com",
  realityPublicKey: "pub",
  realityPrivateKey: "priv",
  realityShortIds: [] as string[],
  realityServerNames: [] as string[],
  transport: "tcp",
  path: null,
  host: null,
  serviceName: null,
  ssMethod: null,
  ssServerKey: null,
  realityDest: null,
  tlsCertificateFile: null,
  tlsKeyFile: null,
  isFallback: false,
  version: 1,
  createdAt: new Date(),
  updatedAt: new Date(),
};

describe("agent config pieces", () => {
  it("Reality defaults: server names = the SNI, dest = <sni>:443; flow matches the links", () => {
    const i = agentInbound(base);
    expect(i).toMatchObject({ tag: "in-443", flow: "xtls-rprx-vision", tls: null, reality: { serverNames: ["www.example.com"], dest: "www.example.com:443", shortIds: [""] } });
    expect(agentInboundSchema.safeParse(i).success).toBe(true);
    expect(agentInbound({ ...base, sni: null }).reality).toBeNull();
    const tls = agentInbound({ ...base, security: "tls", tlsCertificateFile: "/c", tlsKeyFile: "/k" });
    expect(tls).toMatchObject({ flow: "", reality: null, tls: { certificateFile: "/c", keyFile: "/k" } });
    expect(agentInbound({ ...base, security: "tls" }).tls).toBeNull();
  });

  it("hands agents only the short ids Xray decodes (even-length hex), so one odd stored id cannot invalidate the config", () => {
    const i = agentInbound({ ...base, realityShortIds: ["abc", "ab12"] });
    expect(i.reality!.shortIds).toEqual(["ab12"]);
    expect(agentInboundSchema.safeParse(i).success).toBe(true);
    expect(agentInbound({ ...base, realityShortIds: ["abc"] }).reality!.shortIds).toEqual([""]);
  });

  it("who may connect: enabled, not expired, under the limit", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    const s = { enabled: true, expiresAt: null, trafficLimitBytes: null, trafficUsedBytes: 0 };
    expect(mayConnect(s, now)).toBe(true);
    expect(mayConnect({ ...s, enabled: false }, now)).toBe(false);
    expect(mayConnect({ ...s, expiresAt: new Date(now) }, now)).toBe(false);
    expect(mayConnect({ ...s, expiresAt: new Date(now + 1) }, now)).toBe(true);
    expect(mayConnect({ ...s, trafficLimitBytes: 10, trafficUsedBytes: 10 }, now)).toBe(false);
    expect(mayConnect({ ...s, trafficLimitBytes: 10, trafficUsedBytes: 9 }, now)).toBe(true);
  });

  it("canonical JSON ignores key order", () => {
    expect(canonicalJson({ b: 1, a: [{ y: 1, x: 2 }] })).toBe(canonicalJson({ a: [{ x: 2, y: 1 }], b: 1 }));
  });

  it("large clusters: each server checks the MAX_NEIGHBOURS after it in a ring", () => {
    const all: AgentNeighbour[] = Array.from({ length: MAX_NEIGHBOURS + 500 }, (_, i) => ({
      serverId: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      name: `s${i}`,
      address: "10.0.0.1",
      ports: [443],
    }));
    const mine = neighboursOf(all, all[1400]!.serverId);
    expect(mine).toHaveLength(MAX_NEIGHBOURS);
    expect(mine[0]!.serverId).toBe(all[1401]!.serverId);
    expect(mine.some((n) => n.serverId === all[1400]!.serverId)).toBe(false);
    // every server is watched by MAX_NEIGHBOURS others
    const watched = new Map<string, number>();
    for (const s of all) for (const n of neighboursOf(all, s.serverId)) watched.set(n.serverId, (watched.get(n.serverId) ?? 0) + 1);
    expect(new Set(watched.values())).toEqual(new Set([MAX_NEIGHBOURS]));
    expect(neighboursOf(all.slice(0, 3), all[0]!.serverId).map((n) => n.name)).toEqual(["s1", "s2"]);
  });

  it("replaceUsers: the named emails leave, the joining ones go in email order, the input list is untouched", () => {
    const u = (email: string, id = "00000000-0000-4000-8000-000000000001") => ({ id, email });
    const users = [u("b"), u("d"), u("f")];
    expect(replaceUsers(users, ["d", "x"], [u("a"), u("e"), u("f", "00000000-0000-4000-8000-000000000002")])).toEqual([
      u("a"),
      u("b"),
      u("e"),
      u("f", "00000000-0000-4000-8000-000000000002"),
    ]);
    expect(users).toEqual([u("b"), u("d"), u("f")]);
    expect(replaceUsers([], [], [u("c"), u("z")])).toEqual([u("c"), u("z")]);
  });
});
