import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { buildRequest, DEFAULT_RETRY, failureText, retryAfterMs, retryDelayMs, signBody, verifySignature } from "./delivery";
import type { AlertPayload } from "./events";

const payload: AlertPayload = { id: "0b6c…", type: "server.down", occurredAt: "2026-11-30T18:00:00.000Z", cluster: { id: "c1", name: "EU" }, data: { server: { id: "s1", name: "fra-1" } } };

describe("signature", () => {
  it("is sha256=<hex HMAC-SHA256 of the raw body> with the secret", () => {
    const body = '{"a":1}';
    const expected = createHmac("sha256", "s3cret-s3cret-s3cret").update(body).digest("hex");
    expect(signBody("s3cret-s3cret-s3cret", body)).toBe(`sha256=${expected}`);
    expect(signBody("s3cret-s3cret-s3cret", body)).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it("verifies only the same body with the same secret", () => {
    const sig = signBody("k".repeat(16), "body");
    expect(verifySignature("k".repeat(16), "body", sig)).toBe(true);
    expect(verifySignature("k".repeat(16), "body ", sig)).toBe(false);
    expect(verifySignature("x".repeat(16), "body", sig)).toBe(false);
    expect(verifySignature("k".repeat(16), "body", sig.slice(0, -1))).toBe(false);
    expect(verifySignature("k".repeat(16), "body", undefined)).toBe(false);
  });
});

describe("retryDelayMs", () => {
  const noJitter = { ...DEFAULT_RETRY, jitter: 0 };
  it("doubles from 5 s, capped at 5 min, and gives up after 8 attempts in all", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => retryDelayMs(n, noJitter));
    expect(delays).toEqual([5000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, null]);
    expect(retryDelayMs(9, noJitter)).toBeNull();
  });

  it("spreads by ±20 % with the random draw, never below 0 or far above the cap", () => {
    expect(retryDelayMs(1, DEFAULT_RETRY, 0)).toBe(4000);
    expect(retryDelayMs(1, DEFAULT_RETRY, 0.5)).toBe(5000);
    expect(retryDelayMs(1, DEFAULT_RETRY, 0.999999)).toBe(6000);
    expect(retryDelayMs(7, DEFAULT_RETRY, 0.999999)).toBeLessThanOrEqual(360_000);
    for (let k = 0; k < 50; k++) {
      const d = retryDelayMs(3, DEFAULT_RETRY)!;
      expect(d).toBeGreaterThanOrEqual(16_000);
      expect(d).toBeLessThanOrEqual(24_000);
    }
  });

  it("odd inputs fall back instead of throwing", () => {
    expect(retryDelayMs(0, noJitter)).toBe(5000);
    expect(retryDelayMs(Number.NaN, noJitter)).toBe(5000);
    expect(retryDelayMs(1, DEFAULT_RETRY, Number.NaN)).toBe(5000);
    expect(retryDelayMs(1, { ...noJitter, maxAttempts: 1 })).toBeNull();
  });
});

describe("buildRequest", () => {
  it("webhook: JSON {id, type, occurredAt, cluster, data} signed, with the event header", () => {
    const r = buildRequest({ kind: "webhook", url: "http://127.0.0.1:1/hook", secret: "a-very-secret-secret" }, payload, { telegramApiUrl: "x", deliveryId: "7" });
    expect(r.url).toBe("http://127.0.0.1:1/hook");
    expect(JSON.parse(r.body)).toEqual(payload);
    expect(Object.keys(JSON.parse(r.body))).toEqual(["id", "type", "occurredAt", "cluster", "data"]);
    expect(r.headers["X-Routeboard-Signature"]).toBe(signBody("a-very-secret-secret", r.body));
    expect(r.headers["X-Routeboard-Event"]).toBe("server.down");
    expect(r.headers["X-Routeboard-Delivery"]).toBe("7");
  });

  it("telegram: sendMessage on the configured API with chat_id and readable text", () => {
    const r = buildRequest({ kind: "telegram", botToken: "123:abc", chatId: "@ops" }, payload, { telegramApiUrl: "http://127.0.0.1:9/" });
    expect(r.url).toBe("http://127.0.0.1:9/bot123:abc/sendMessage");
    const body = JSON.parse(r.body);
    expect(body.chat_id).toBe("@ops");
    expect(body.text).toMatch(/^🔴 Server fra-1 in EU is down/);
  });
});

describe("failureText", () => {
  it("names timeouts and network causes and never carries a secret", () => {
    const timeout = Object.assign(new Error("The operation was aborted due to timeout"), { name: "TimeoutError" });
    expect(failureText(timeout)).toBe("no answer within the timeout");
    const net = new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:1") });
    expect(failureText(net)).toBe("fetch failed: connect ECONNREFUSED 127.0.0.1:1");
    expect(failureText(new Error("GET /bot123:SECRET/sendMessage failed"), ["123:SECRET"])).toBe("GET /bot…/sendMessage failed");
  });
});

describe("retryAfterMs", () => {
  it("reads Retry-After seconds and Telegram's retry_after; anything odd is 0", () => {
    expect(retryAfterMs("30", "")).toBe(30_000);
    expect(retryAfterMs(null, '{"ok":false,"error_code":429,"parameters":{"retry_after":12}}')).toBe(12_000);
    expect(retryAfterMs("5", '{"parameters":{"retry_after":12}}')).toBe(12_000);
    expect(retryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", "")).toBe(0);
    expect(retryAfterMs("-1", "not json")).toBe(0);
    expect(retryAfterMs(null, '{"parameters":{"retry_after":"soon"}}')).toBe(0);
  });
});
