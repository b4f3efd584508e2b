import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
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
