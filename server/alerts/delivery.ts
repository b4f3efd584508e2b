/**
 * How one alert is sent (pure parts): the webhook signature, the retry schedule and the
 * HTTP requests of both target kinds. The worker (worker.ts) does the I/O.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { STATUS_CODES } from "node:http";
import { alertText, type AlertPayload } from "./events";

export const SIGNATURE_HEADER = "X-Routeboard-Signature";
export const EVENT_HEADER = "X-Routeboard-Event";
export const DELIVERY_HEADER = "X-Routeboard-Delivery";

/** `sha256=<hex HMAC-SHA256 of the raw body>` with the target's secret. */
export function signBody(secret: string, rawBody: string): string {
  return `sha256=${createHmac("sha256", secret).update(rawBody, "utf8").digest("hex")}`;
}

/** What a receiver does: recompute and compare in constant time. */
export function verifySignature(secret: string, rawBody: string, header: string | null | undefined): boolean {
  if (typeof header !== "string") return false;
  const want = Buffer.from(signBody(secret, rawBody));
  const got = Buffer.from(header);
  return want.length === got.length && timingSafeEqual(want, got);
}

export interface RetryPolicy {
  /** Delay after the first failed attempt; doubled after each further one. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Attempts in all, the first included; then the delivery is failed. */
  maxAttempts: number;
  /** ± this fraction of random spread, so many deliveries failing together do not retry in step. */
  jitter: number;
}

/** 5 s, 10 s, 20 s, … capped at 5 min, 8 attempts: about 11 minutes of trying. */
export const DEFAULT_RETRY: RetryPolicy = { baseDelayMs: 5000, maxDelayMs: 300_000, maxAttempts: 8, jitter: 0.2 };

/**
 * Delay before the next attempt after `failedAttempts` failures (≥ 1), or null when no
 * attempt is left. `random` in [0, 1) picks the jitter.
 */
export function retryDelayMs(failedAttempts: number, policy: RetryPolicy = DEFAULT_RETRY, random: number = Math.random()): number | null {
  if (!Number.isFinite(failedAttempts) || failedAttempts < 1) failedAttempts = 1;
  if (failedAttempts >= policy.maxAttempts) return null;
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (failedAttempts - 1));
  const r = Math.min(Math.max(Number.isFinite(random) ? random : 0.5, 0), 1);
  const spread = exp * policy.jitter * (2 * r - 1);
  return Math.max(0, Math.round(Math.min(policy.maxDelayMs * (1 + policy.jitter), exp + spread)));
}

export interface WebhookTarget {
  kind: "webhook";
  url: string;
  secret: string;
}
export interface TelegramTarget {
  kind: "telegram";
  botToken: string;
  chatId: string;
}
export type DeliverableTarget = WebhookTarget | TelegramTarget;

export interface AlertRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** The HTTP request that delivers `payload` to `target`. */
export function buildRequest(target: DeliverableTarget, payload: AlertPayload, opts: { telegramApiUrl: string; deliveryId?: string }): AlertRequest {
  if (target.kind === "webhook") {
    const body = JSON.stringify({ id: payload.id, type: payload.type, occurredAt: payload.occurredAt, cluster: payload.cluster, data: payload.data });
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "Routeboard-Alerts/1",
      [SIGNATURE_HEADER]: signBody(target.secret, body),
      [EVENT_HEADER]: payload.type,
    };
    if (opts.deliveryId) headers[DELIVERY_HEADER] = opts.deliveryId;
    return { url: target.url, headers, body };
  }
  const base = opts.telegramApiUrl.replace(/\/+$/, "");
  const body = JSON.stringify({ chat_id: target.chatId, text: alertText(payload), disable_web_page_preview: true });
  return { url: `${base}/bot${target.botToken}/sendMessage`, headers: { "content-type": "application/json" }, body };
}

/** The one reason for every failure without an HTTP answer (refused, reset, timed out, DNS). */
export const NO_ANSWER_REASON = "could not connect, or no answer in time";

/**
 * A non-2xx answer as stored and shown: the status code and its standard name, never the
 * receiver's own reason phrase or body. `said` is a trusted API's own words (Telegram's).
 */
export function httpFailureText(status: number, said: string | null = null): string {
  const name = STATUS_CODES[status];
  return `HTTP ${status}${name ? ` ${name}` : ""}${said ? `: ${said}` : ""}`;
}

/** A short, single-line reason for a failed attempt, with secrets (the bot token in a URL) left out. */
export function failureText(err: unknown, secrets: readonly string[] = []): string {
  let msg: string;
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    if (err.name === "TimeoutError" || err.name === "AbortError") msg = "no answer within the timeout";
    else if (cause instanceof Error && cause.message) msg = `${err.message}: ${cause.message}`;
    else msg = err.message;
  } else msg = String(err);
  for (const s of secrets) if (s) msg = msg.split(s).join("…");
  return msg.replace(/\s+/g, " ").slice(0, 500);
}

/** A receiver's own wait before the next try: Retry-After seconds, or Telegram's parameters.retry_after. */
export function retryAfterMs(header: string | null, telegramBody: string): number {
  const fromHeader = header !== null && /^\d{1,6}$/.test(header.trim()) ? Number(header.trim()) * 1000 : 0;
  const tg = telegramBody ? (parseJson(telegramBody) as { parameters?: { retry_after?: unknown } } | null) : null;
  const fromBody = typeof tg?.parameters?.retry_after === "number" && Number.isFinite(tg.parameters.retry_after) ? Math.max(0, tg.parameters.retry_after) * 1000 : 0;
  return Math.max(fromHeader, fromBody);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
