import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { bearerCredential, checkOrigin, clientAddress, isHttps, requestHost } from "./client";

function req(headers: Record<string, string>, remoteAddress = "::ffff:10.0.0.2"): IncomingMessage {
  return { headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

describe("clientAddress", () => {
  it("is the socket without TRUST_PROXY, whatever X-Forwarded-For says", () => {
    expect(clientAddress(req({ "x-forwarded-for": "6.6.6.6" }), { trustProxy: 0 })).toBe("10.0.0.2");
  });
  it("is the n-th entry from the right with TRUST_PROXY=n; spoofed entries to its left are ignored", () => {
    const r = req({ "x-forwarded-for": "6.6.6.6, 203.0.113.7, 10.0.0.9" });
    expect(clientAddress(r, { trustProxy: 1 })).toBe("10.0.0.9");
    expect(clientAddress(r, { trustProxy: 2 })).toBe("203.0.113.7");
    expect(clientAddress(r, { trustProxy: 5 })).toBe("6.6.6.6");
    expect(clientAddress(req({}), { trustProxy: 1 })).toBe("10.0.0.2");
  });
});

describe("isHttps and requestHost", () => {
  it("take the first X-Forwarded-Proto/-Host value, and only behind a trusted proxy", () => {
    expect(isHttps(req({ "x-forwarded-proto": "https,http" }), { trustProxy: 1 })).toBe(true);
    expect(isHttps(req({ "x-forwarded-proto": "http, https" }), { trustProxy: 1 })).toBe(false);
    expect(isHttps(req({ "x-forwarded-proto": "https" }), { trustProxy: 0 })).toBe(false);
    expect(requestHost(req({ host: "internal:3000", "x-forwarded-host": "Panel.example.com, x" }), { trustProxy: 1 })).toBe("panel.example.com");
    expect(requestHost(req({ host: "internal:3000", "x-forwarded-host": "evil.com" }), { trustProxy: 0 })).toBe("internal:3000");
  });
});

describe("checkOrigin", () => {
  const trust = { trustProxy: 0 };
  it("follows Sec-Fetch-Site when the browser sends it", () => {
    expect(checkOrigin(req({ "sec-fetch-site": "same-origin" }), trust).ok).toBe(true);
    expect(checkOrigin(req({ "sec-fetch-site": "none" }), trust).ok).toBe(true);
    expect(checkOrigin(req({ "sec-fetch-site": "same-site" }), trust).ok).toBe(false);
    expect(checkOrigin(req({ "sec-fetch-site": "cross-site", origin: "http://a" }), trust).ok).toBe(false);
  });
  it("else compares Origin with Host (or PUBLIC_URL), and lets header-less scripts through", () => {
    expect(checkOrigin(req({ host: "a:3000", origin: "http://a:3000" }), trust).ok).toBe(true);
    expect(checkOrigin(req({ host: "a:3000", origin: "http://b:3000" }), trust).ok).toBe(false);
    expect(checkOrigin(req({ host: "a:3000", origin: "null" }), trust).ok).toBe(false);
    expect(checkOrigin(req({ host: "a:3000" }), trust).ok).toBe(true);
    const pub = { trustProxy: 0, publicUrl: "https://panel.example.com" };
    expect(checkOrigin(req({ host: "evil.com", origin: "http://evil.com" }), pub).ok).toBe(false);
    expect(checkOrigin(req({ host: "evil.com", origin: "https://panel.example.com" }), pub).ok).toBe(true);
  });
  it("compares scheme, host and port exactly (issue 21, point 12)", () => {
    // Without PUBLIC_URL: the scheme the request came with counts too.
    const proxied = { trustProxy: 1 };
    const overHttps = (origin: string) => req({ host: "internal:3000", "x-forwarded-host": "panel.example.com", "x-forwarded-proto": "https", origin });
    expect(checkOrigin(overHttps("https://panel.example.com"), proxied).ok).toBe(true);
    expect(checkOrigin(overHttps("https://PANEL.example.com:443"), proxied).ok).toBe(true);
    expect(checkOrigin(overHttps("http://panel.example.com"), proxied).ok).toBe(false);
    expect(checkOrigin(overHttps("https://panel.example.com:8443"), proxied).ok).toBe(false);
    expect(checkOrigin(req({ host: "a:3000", origin: "https://a:3000" }), trust).ok).toBe(false);
    expect(checkOrigin(req({ host: "a:3000", origin: "http://a:3001" }), trust).ok).toBe(false);
    expect(checkOrigin(req({ host: "a:3000", origin: "ftp://a:3000" }), trust).ok).toBe(false);
    // With PUBLIC_URL: its scheme, host and port; a path in it does not matter.
    const pub = { trustProxy: 0, publicUrl: "https://panel.example.com:8443/routeboard/" };
    expect(checkOrigin(req({ host: "x", origin: "https://panel.example.com:8443" }), pub).ok).toBe(true);
    expect(checkOrigin(req({ host: "x", origin: "https://panel.example.com" }), pub).ok).toBe(false);
    expect(checkOrigin(req({ host: "x", origin: "http://panel.example.com:8443" }), pub).ok).toBe(false);
    expect(checkOrigin(req({ host: "x", origin: "https://panel.example.com.evil.com:8443" }), pub).ok).toBe(false);
  });
});

describe("bearerCredential", () => {
  it("is the credential of a Bearer header (any case), trimmed", () => {
    expect(bearerCredential("Bearer rbt_x")).toBe("rbt_x");
    expect(bearerCredential("bearer \t rbt_x  ")).toBe("rbt_x");
    expect(bearerCredential(["BEARER rbt_x", "Bearer other"])).toBe("rbt_x");
  });
  it("keeps a malformed one, so it is refused as a token and never taken for a cookie request", () => {
    expect(bearerCredential("Bearer")).toBe("");
    expect(bearerCredential("Bearer ")).toBe("");
    expect(bearerCredential("Bearer a b")).toBe("a b");
  });
  it("is undefined without the header or with another scheme", () => {
    expect(bearerCredential(undefined)).toBeUndefined();
    expect(bearerCredential("")).toBeUndefined();
    expect(bearerCredential("Basic Zm9vOmJhcg==")).toBeUndefined();
    expect(bearerCredential("Bearerrbt_x")).toBeUndefined();
  });
});
