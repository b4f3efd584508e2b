/**
 * Issue 21, point 12: the dashboard's request hook (proxy.ts, which puts the CSP on pages)
 * runs for Next's prefetch requests too, not only for full page loads. Checked with Next's
 * own matcher (next/experimental/testing/server), on the hook's exported config.
 */
import { describe, expect, it } from "vitest";
import { unstable_doesMiddlewareMatch } from "next/experimental/testing/server";
import { config, proxy } from "@/proxy";
import { NextRequest } from "next/server";

const matches = (url: string, headers: Record<string, string> = {}) => unstable_doesMiddlewareMatch({ config, url, headers });

describe("proxy.ts matcher", () => {
  it("runs for page loads and for every kind of prefetch", () => {
    expect(matches("/clusters")).toBe(true);
    expect(matches("/clusters", { "next-router-prefetch": "1", rsc: "1" })).toBe(true);
    expect(matches("/clusters?_rsc=abc12", { rsc: "1" })).toBe(true);
    expect(matches("/clusters", { purpose: "prefetch" })).toBe(true);
    expect(matches("/clusters", { "sec-purpose": "prefetch" })).toBe(true);
  });

  it("skips static files, which carry no script", () => {
    expect(matches("/_next/static/chunks/main.js")).toBe(false);
    expect(matches("/favicon.svg")).toBe(false);
  });

  it("puts the page policy and the security headers on a prefetch's answer", () => {
    const res = proxy(new NextRequest("http://localhost/clusters?_rsc=x", { headers: { "next-router-prefetch": "1", rsc: "1" } }));
    expect(res.headers.get("content-security-policy")).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });
});
