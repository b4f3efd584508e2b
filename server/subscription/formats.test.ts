import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { blockReason } from "@/server/usage/access";
import {
  blockMessage,
  CLASH_FIXED_NAMES,
  INFO_UUID,
  infoEntry,
  CLASH_GROUP,
  proxyNames,
  SINGBOX_FIXED_TAGS,
  parseFormat,
  profileTitle,
  renderBase64,
  renderClash,
  renderJson,
  renderSingbox,
  subscriptionUserinfo,
  vlessShareLink,
  type SubscriptionEntry,
} from "./formats";

const UUID = "6f1c6c1e-6c2a-4d8e-9d8c-0a1b2c3d4e5f";
const reality: SubscriptionEntry = {
  routeId: "r1",
  route: "🇺🇸 USA",
  inboundId: "i1",
  inbound: "🇺🇸 New York",
  server: "us-nyc-1",
  address: "198.51.100.10",
  port: 443,
  security: "reality",
  sni: "www.microsoft.com",
  realityPublicKey: "PUBKEY",
  realityShortId: "abcd1234",
};
const tls: SubscriptionEntry = { ...reality, routeId: "r2", route: "🇩🇪 Germany", inboundId: "i2", inbound: "🇩🇪 Frankfurt TLS", security: "tls", address: "2001:db8::1", port: 8443, sni: "cdn.example.net", realityPublicKey: null, realityShortId: null };

describe("share links", () => {
  it("builds a Reality link with the inbound name as the fragment", () => {
    const link = vlessShareLink(UUID, reality);
    const u = new URL(link);
    expect(u.protocol).toBe("vless:");
    expect(u.username).toBe(UUID);
    expect(u.hostname).toBe("198.51.100.10");
    expect(u.port).toBe("443");
    expect(u.searchParams.get("security")).toBe("reality");
    expect(u.searchParams.get("pbk")).toBe("PUBKEY");
    expect(u.searchParams.get("sid")).toBe("abcd1234");
    expect(u.searchParams.get("sni")).toBe("www.microsoft.com");
    expect(u.searchParams.get("flow")).toBe("xtls-rprx-vision");
    expect(decodeURIComponent(u.hash.slice(1))).toBe("🇺🇸 New York");
  });
  it("brackets IPv6 addresses and uses TLS parameters", () => {
    const link = vlessShareLink(UUID, tls);
    expect(link).toContain("@[2001:db8::1]:8443?");
    expect(link).toContain("security=tls");
    expect(link).not.toContain("pbk=");
  });
  it("base64 body decodes to one link per entry, in order", () => {
    const lines = Buffer.from(renderBase64(UUID, [reality, tls]), "base64").toString("utf8").split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/#%F0%9F%87%BA%F0%9F%87%B8%20New%20York$/);
    expect(lines[1]).toContain("Frankfurt%20TLS");
  });
  it("an empty subscription is an empty body", () => {
    expect(renderBase64(UUID, [])).toBe("");
  });

  // What the body is defined as: the links joined by newlines, encoded as UTF-8, then base64.
  const joinedLinks = (uuid: string, entries: readonly SubscriptionEntry[]) =>
    Buffer.from(entries.map((e) => vlessShareLink(uuid, e)).join("\n"), "utf8").toString("base64");

  it("base64 body is byte for byte the joined links, for non-ASCII names, IPv6 addresses and every security", () => {
    const entries: SubscriptionEntry[] = [
      reality,
      tls,
      { ...tls, inboundId: "i3", inbound: "Ünïcödé 東京 👩‍👩‍👧 \u200b", security: "none", address: "[2001:db8::2]", sni: null },
      { ...reality, inboundId: "i4", inbound: "", address: "vpn.example.org", port: 1, sni: null, realityPublicKey: null, realityShortId: null },
      infoEntry("⛔ Traffic limit reached — renews on 1 Dec"),
    ];
    for (let n = 0; n <= entries.length; n++) {
      const some = entries.slice(0, n);
      expect(renderBase64(UUID, some)).toBe(joinedLinks(UUID, some));
      expect(renderBase64(INFO_UUID, some)).toBe(joinedLinks(INFO_UUID, some));
    }
    // The same entry twice in a row, and again after its cached bytes exist.
    expect(renderBase64(UUID, [tls, tls, reality, tls])).toBe(joinedLinks(UUID, [tls, tls, reality, tls]));
  });

  it("base64 body equals the joined links for any names, hosts, ports and uuids", () => {
    const security = fc.constantFrom("reality" as const, "tls" as const, "none" as const);
    const text = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: "grapheme", maxLength: 12 }), fc.string({ unit: "binary", maxLength: 12 }));
    const address = fc.oneof(fc.ipV4(), fc.ipV6(), fc.domain(), fc.ipV6().map((a) => `[${a}]`));
    const entry = fc.record({
      inbound: text,
      route: text,
      address,
      port: fc.integer({ min: 1, max: 65535 }),
      security,
      sni: fc.option(text),
      realityPublicKey: fc.option(text),
      realityShortId: fc.option(text),
    });
    fc.assert(
      fc.property(fc.oneof(fc.uuid(), text), fc.array(entry, { maxLength: 8 }), (uuid, parts) => {
        const entries = parts.map((p, i): SubscriptionEntry => ({ ...p, routeId: `r${i}`, inboundId: `i${i}`, server: `s${i}` }));
        let expected: string;
        try {
          expected = joinedLinks(uuid, entries);
        } catch {
          // A lone surrogate in a name cannot be URL-encoded: both ways refuse it.
          expect(() => renderBase64(uuid, entries)).toThrow();
          return;
        }
        expect(renderBase64(uuid, entries)).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });
});

describe("json, clash and sing-box", () => {
  it("json lists routeId, route, inboundId, inbound, name (the line's name in the app), server, protocol, transport, security and link", () => {
    const j = JSON.parse(renderJson(UUID, [reality]));
    expect(j.routes).toEqual([
      { routeId: "r1", route: "🇺🇸 USA", flag: null, flagCode: null, inboundId: "i1", inbound: "🇺🇸 New York", name: "🇺🇸 New York", server: "us-nyc-1", protocol: "vless", transport: "tcp", security: "reality", link: vlessShareLink(UUID, reality) },
    ]);
  });
  it("json carries the route's flag as an emoji and as its country code", () => {
    const j = JSON.parse(renderJson(UUID, [{ ...reality, routeFlag: "DE" }]));
    expect(j.routes[0]).toMatchObject({ route: "🇺🇸 USA", flag: "🇩🇪", flagCode: "DE" });
  });
  it("clash YAML quotes names safely and has a selector group", () => {
    const tricky = { ...reality, inbound: 'He said "hi": #1' };
    const y = renderClash(UUID, [tricky, tls]);
    expect(y).toContain('  - name: "He said \\"hi\\": #1"');
    expect(y).toContain("reality-opts:");
    expect(y).toContain("      public-key: \"PUBKEY\"");
    expect(y).toContain("rules:\n  - MATCH,Proxy");
  });
  it("clash and sing-box make duplicate proxy names unique", () => {
    const twin = { ...tls, inbound: reality.inbound };
    expect(renderClash(UUID, [reality, twin])).toContain('"🇺🇸 New York (2)"');
    const sb = JSON.parse(renderSingbox(UUID, [reality, twin]));
    const tags = sb.outbounds.map((o: { tag: string }) => o.tag);
    expect(new Set(tags).size).toBe(tags.length);
  });
  it("sing-box has vless outbounds with reality and a selector", () => {
    const sb = JSON.parse(renderSingbox(UUID, [reality, tls]));
    const vless = sb.outbounds.filter((o: { type: string }) => o.type === "vless");
    expect(vless).toHaveLength(2);
    expect(vless[0].tls.reality).toEqual({ enabled: true, public_key: "PUBKEY", short_id: "abcd1234" });
    expect(vless[1].tls.reality).toBeUndefined();
    expect(sb.outbounds[0]).toMatchObject({ type: "selector", tag: "proxy" });
    expect(sb.route.final).toBe("proxy");
  });
});

describe("a route that names its line (lineName)", () => {
  const named: SubscriptionEntry = { ...reality, lineName: "🇺🇸 USA" };
  it("gives the route's name in every format, and keeps the inbound's name in JSON's inbound", () => {
    expect(decodeURIComponent(new URL(vlessShareLink(UUID, named)).hash.slice(1))).toBe("🇺🇸 USA");
    const json = JSON.parse(renderJson(UUID, [named, tls])) as { routes: Array<{ inbound: string; name: string; link: string }> };
    expect(json.routes.map((r) => [r.inbound, r.name])).toEqual([
      ["🇺🇸 New York", "🇺🇸 USA"],
      ["🇩🇪 Frankfurt TLS", "🇩🇪 Frankfurt TLS"],
    ]);
    expect(renderClash(UUID, [named])).toContain('  - name: "🇺🇸 USA"');
    const singbox = JSON.parse(renderSingbox(UUID, [named])) as { outbounds: Array<{ type: string; tag: string }> };
    expect(singbox.outbounds.find((o) => o.type === "vless")!.tag).toBe("🇺🇸 USA");
  });
  it("stays unique in Clash and sing-box when a route's name equals another line's name", () => {
    // Route r1 shows its name "🇩🇪 Frankfurt TLS"; route r2 shows its inbound of the same name (any case).
    const entries = [{ ...reality, lineName: "🇩🇪 Frankfurt TLS" }, { ...tls, inbound: "🇩🇪 FRANKFURT tls" }];
    expect(proxyNames(entries)).toEqual(["🇩🇪 Frankfurt TLS", "🇩🇪 FRANKFURT tls (2)"]);
    const clash = renderClash(UUID, entries);
    expect(clash).toContain('  - name: "🇩🇪 Frankfurt TLS"');
    expect(clash).toContain('  - name: "🇩🇪 FRANKFURT tls (2)"');
    const tags = (JSON.parse(renderSingbox(UUID, entries)) as { outbounds: Array<{ tag: string }> }).outbounds.map((o) => o.tag.toLowerCase());
    expect(new Set(tags).size).toBe(tags.length);
  });
});

describe("headers and parameters", () => {
  it("parses formats and refuses unknown ones", () => {
    expect(parseFormat(null)).toBe("base64");
    expect(parseFormat("json")).toBe("json");
    expect(parseFormat("sing-box")).toBe("singbox");
    expect(parseFormat("xml")).toBeNull();
  });
  it("subscription-userinfo carries usage, limit and expiry", () => {
    expect(subscriptionUserinfo(56, 1234, 10_000, new Date("2027-01-01T00:00:00Z"))).toBe("upload=56; download=1234; total=10000; expire=1798761600");
    expect(subscriptionUserinfo(0, 0, null, null)).toBe("upload=0; download=0; total=0; expire=0");
  });
  it("profile-title is base64 for non-ASCII names", () => {
    expect(profileTitle("Demo cluster")).toBe("Demo cluster");
    expect(profileTitle("🇺🇸 Fleet")).toBe(`base64:${Buffer.from("🇺🇸 Fleet").toString("base64")}`);
  });
});

/** Finding 5 of issue 11: names collided with each other and with the fixed group names. */
describe("clash YAML quoting", () => {
  it("keeps a name with a Unicode line or paragraph separator on one line (found by the property test)", () => {
    const yaml = renderClash(UUID, [{ ...reality, routeId: "r0", inboundId: "i0", inbound: "! \u2028x\u2029", route: "DIRECT" }]);
    const line = yaml.split("\n").find((l) => l.startsWith("  - name: "))!;
    expect(line).toBe('  - name: "! \\u2028x\\u2029"');
    expect(JSON.parse(line.slice("  - name: ".length))).toBe("! \u2028x\u2029");
  });
});

describe("proxy names (property)", () => {
  const FIXED = [...CLASH_FIXED_NAMES, ...SINGBOX_FIXED_TAGS];
  const nameArb = fc.oneof(
    fc.constantFrom(...FIXED, ...FIXED.map((n) => n.toLowerCase()), ...FIXED.map((n) => n.toUpperCase()), "dup", "dup (2)", "dup (3)", "DUP", "x (2)", "Proxy (2)", "DIRECT (2)"),
    fc.constantFrom("", " ", "\u200b", "\ufeff", "\u00ad", "\t", "  \u200e "),
    fc.string({ maxLength: 12 }),
    fc.string({ unit: "grapheme", maxLength: 6 }),
    fc.tuple(fc.constantFrom("dup", "x", "Proxy", "direct", ""), fc.integer({ min: 1, max: 4 })).map(([b, n]) => `${b} (${n})`),
  );
  const entriesArb = fc.array(fc.record({ inbound: nameArb, route: nameArb }), { maxLength: 12 }).map((list) => list.map((n, i) => ({ ...reality, routeId: `r${i}`, inboundId: `i${i}`, ...n })));

  function clashNames(yaml: string) {
    const [proxiesPart, rest] = yaml.split("\nproxy-groups:\n") as [string, string];
    const groupsPart = rest.split("\nrules:\n")[0]!;
    const proxies = [...proxiesPart.matchAll(/^ {2}- name: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as string);
    const groups = groupsPart.split(/^ {2}- name: /m).slice(1).map((block) => {
      const [nameLine, ...lines] = block.split("\n");
      const members = lines.filter((l) => l.startsWith("      - ")).map((l) => l.slice(8)).map((m) => (m.startsWith('"') ? (JSON.parse(m) as string) : m));
      return { name: JSON.parse(nameLine!) as string, members };
    });
    return { proxies, groups };
  }

  it("clash: unique, never a fixed name, groups list existing proxies and never themselves", () => {
    fc.assert(
      fc.property(entriesArb, (entries) => {
        const { proxies, groups } = clashNames(renderClash(UUID, entries));
        expect(proxies).toHaveLength(entries.length);
        const lower = proxies.map((n) => n.toLowerCase());
        expect(new Set(lower).size).toBe(lower.length);
        for (const n of proxies) {
          expect(FIXED.map((f) => f.toLowerCase())).not.toContain(n.toLowerCase());
          expect(n.replace(/[\s\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff\u00ad]/gu, "")).not.toBe("");
        }
        const builtins = new Set(["DIRECT", "REJECT"]);
        for (const g of groups) {
          expect(g.members).not.toContain(g.name);
          for (const m of g.members) expect(proxies.includes(m) || builtins.has(m)).toBe(true);
        }
        expect(groups.map((g) => g.name)).toEqual([CLASH_GROUP]);
      }),
      { numRuns: 300 },
    );
  });

  it("sing-box: unique tags, never a fixed tag, the selector lists existing outbounds and never itself", () => {
    fc.assert(
      fc.property(entriesArb, (entries) => {
        const sb = JSON.parse(renderSingbox(UUID, entries)) as { outbounds: Array<{ type: string; tag: string; outbounds?: string[] }>; route: { final: string } };
        const tags = sb.outbounds.map((o) => o.tag);
        expect(new Set(tags.map((t) => t.toLowerCase())).size).toBe(tags.length);
        const vless = sb.outbounds.filter((o) => o.type === "vless").map((o) => o.tag);
        expect(vless).toHaveLength(entries.length);
        for (const t of vless) expect(FIXED.map((f) => f.toLowerCase())).not.toContain(t.toLowerCase());
        for (const o of sb.outbounds.filter((x) => x.outbounds)) {
          expect(o.outbounds).not.toContain(o.tag);
          for (const m of o.outbounds!) expect(tags).toContain(m);
        }
        expect(tags).toContain(sb.route.final);
      }),
      { numRuns: 300 },
    );
  });

  it("the issue's example: DIRECT, Proxy, dup, dup and dup (2)", () => {
    const names = proxyNames(["DIRECT", "Proxy", "dup", "dup", "dup (2)"].map((inbound) => ({ inbound, route: "R" })));
    expect(names).toEqual(["DIRECT (2)", "Proxy (2)", "dup", "dup (2)", "dup (2) (2)"]);
  });
});

describe("sing-box 1.11+ structure", () => {
  const sb = JSON.parse(renderSingbox(UUID, [reality, tls])) as {
    dns: { servers: Array<{ tag: string; address: string; detour?: string }>; rules: Array<Record<string, unknown>>; final: string };
    outbounds: Array<{ type: string; tag: string }>;
    route: { rules: Array<Record<string, unknown>>; final: string };
    inbounds: Array<Record<string, unknown>>;
  };
  it("has a dns section whose final server exists and whose remote server goes through the selector", () => {
    const tags = sb.dns.servers.map((s) => s.tag);
    expect(tags).toContain(sb.dns.final);
    expect(sb.dns.servers.find((s) => s.tag === sb.dns.final)).toMatchObject({ address: "https://1.1.1.1/dns-query", detour: "proxy" });
    // The VPN servers' own names are resolved outside the tunnel.
    expect(sb.dns.rules).toContainEqual({ outbound: "any", server: "dns-local" });
    for (const r of sb.dns.rules) expect(tags).toContain(r.server);
    // A detour names an outbound that exists, never an empty direct one (deprecated in 1.12).
    const outboundTags = sb.outbounds.map((o) => o.tag);
    for (const s of sb.dns.servers) if (s.detour) expect(outboundTags).toContain(s.detour);
    expect(sb.dns.servers.some((s) => s.detour === "direct")).toBe(false);
  });
  it("routes with rule actions, not the special outbounds removed in 1.11–1.13", () => {
    expect(sb.route.rules).toContainEqual({ action: "sniff" });
    expect(sb.route.rules).toContainEqual({ protocol: "dns", action: "hijack-dns" });
    expect(sb.outbounds.map((o) => o.type)).not.toContain("dns");
    expect(sb.outbounds.map((o) => o.type)).not.toContain("block");
    for (const r of sb.route.rules) if ("outbound" in r) expect(sb.outbounds.map((o) => o.tag)).toContain(r.outbound);
    // Legacy inbound fields removed in 1.13.
    for (const i of sb.inbounds) for (const k of ["sniff", "sniff_override_destination", "domain_strategy", "inet4_address"]) expect(i).not.toHaveProperty(k);
  });
});

describe("the informational entry", () => {
  const expired = blockReason({ expiresAt: new Date("2026-12-01T10:00:00Z"), trafficLimitBytes: null, trafficUsedBytes: 0 }, Date.parse("2026-12-02T00:00:00Z"))!;
  it("says why and when", () => {
    expect(blockMessage(expired)).toBe("⛔ Subscription expired on 1 Dec 2026 — contact your provider to renew");
    const limited = blockReason({ expiresAt: null, trafficLimitBytes: 100, trafficUsedBytes: 100 }, 0)!;
    expect(limited).toEqual({ kind: "limited", usedBytes: 100, limitBytes: 100, renewsAt: null });
    expect(blockMessage(limited)).toBe("⛔ Traffic limit reached — contact your provider to renew");
    // With a reset schedule: the day it renews (00:00 UTC of that day).
    const renewing = blockReason({ expiresAt: null, trafficLimitBytes: 100, trafficUsedBytes: 150, nextResetAt: new Date("2026-12-01T00:00:00Z") }, 0)!;
    expect(blockMessage(renewing)).toBe("⛔ Traffic limit reached — renews on 1 Dec");
    expect(blockMessage({ kind: "limited", usedBytes: 1, limitBytes: 1, renewsAt: new Date("2027-02-28T00:00:00Z") })).toBe("⛔ Traffic limit reached — renews on 28 Feb");
    expect(blockReason({ expiresAt: null, trafficLimitBytes: 100, trafficUsedBytes: 99 }, 0)).toBeNull();
    expect(blockReason({ expiresAt: new Date(10), trafficLimitBytes: null, trafficUsedBytes: 0 }, 9)).toBeNull();
    // Both: expiry is said (a new limit would not help).
    expect(blockReason({ expiresAt: new Date(10), trafficLimitBytes: 1, trafficUsedBytes: 5 }, 10)?.kind).toBe("expired");
  });
  it("is one valid entry in every format, at 127.0.0.1:1", () => {
    const e = infoEntry(blockMessage(expired));
    const link = new URL(Buffer.from(renderBase64(INFO_UUID, [e]), "base64").toString("utf8"));
    expect([link.hostname, link.port, link.searchParams.get("security"), decodeURIComponent(link.hash.slice(1))]).toEqual(["127.0.0.1", "1", "none", blockMessage(expired)]);
    expect(JSON.parse(renderJson(INFO_UUID, [e])).routes).toHaveLength(1);
    const y = renderClash(INFO_UUID, [e]);
    expect(y).toContain(`  - name: ${JSON.stringify(blockMessage(expired))}\n    type: vless\n    server: "127.0.0.1"\n    port: 1\n`);
    const sb = JSON.parse(renderSingbox(INFO_UUID, [e]));
    expect(sb.outbounds.filter((o: { type: string }) => o.type === "vless")).toEqual([expect.objectContaining({ tag: blockMessage(expired), server: "127.0.0.1", server_port: 1 })]);
  });
});
