/**
 * The agent's HTTP client for the panel's two endpoints (contract in core/agent-wire.ts):
 * GET /api/agent/config (ETag, If-None-Match, ?wait long-poll, ?delta=1, compressed answers),
 * POST /api/agent/report and POST /api/agent/heartbeat (every HEARTBEAT_INTERVAL_S, with no
 * body or with the load measured every LOAD_INTERVAL_S: core/heartbeat.ts).
 */
import { agentConfigDeltaSchema, type AgentConfig, type AgentReport, type AgentReportAck, type HeartbeatBody } from "../core/agent-wire";
import { applyUserDelta, CONFIG_VERSION_SCHEME, legacyVersionOfConfig, versionOfConfig } from "../core/config-version";
import { formatZodError } from "../core/zod-format";
import { checkConfig, readConfigBody, type ConfigBody } from "./config-stream";

/**
 * Said once, then the agent exits 3 (main.ts): the token is gone because the server or its
 * cluster was deleted, or the token was rotated. Retrying cannot help, so it does not.
 */
export const UNAUTHORIZED_MESSAGE =
  "the panel refused this token (401): this server was removed from the panel (or its cluster deleted), or its token was rotated. Stopping; if the server still exists, copy a fresh token from its page";

export type ConfigAnswer =
  /** `delta`: how many users the delta added and removed (absent: the full config came). */
  | { kind: "config"; config: AgentConfig; version: string; delta?: { added: number; removed: number } }
  | { kind: "unchanged" }
  /** A delta that does not apply to the base or does not hash to its version: ask for the full config. */
  | { kind: "delta-failed"; error: string }
  /** 200 whose body is not a valid config: logged with the field, then ignored. */
  | { kind: "invalid"; error: string }
  | { kind: "unauthorized" }
  | { kind: "error"; error: string };

export type ReportAnswer =
  | { kind: "ack"; ack: AgentReportAck }
  | { kind: "unauthorized" }
  | { kind: "rejected"; status: number; error: string }
  /** 429 (slow down) or 503 (`unavailable`: the panel is up but cannot take reports now). */
  | { kind: "retry"; afterS: number; error: string; unavailable: boolean }
  | { kind: "error"; error: string };

export type HeartbeatAnswer =
  | "ok"
  /** 404 or 405: a panel that predates heartbeats. */
  | { kind: "unsupported"; status: number }
  | "unauthorized"
  | "retry"
  | "error"
  /** 400/413 to a heartbeat with a body: the panel does not take it (a contract mismatch). */
  | { kind: "rejected"; status: number; error: string };

export class PanelClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly userAgent: string,
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, "user-agent": this.userAgent, ...extra };
  }

  /**
   * One long-poll: answers when the version differs from `version`, else "unchanged". With
   * `base` (the config at `version`) it asks for a delta and rebuilds the full config from it,
   * checked against the version the panel named (core/config-version.ts). A full config is read
   * as it arrives (config-stream.ts), its users that `base` has unchanged taken from `base`.
   */
  async fetchConfig(version: string | null, waitS: number, signal?: AbortSignal, base?: AgentConfig | null): Promise<ConfigAnswer> {
    const deltaBase = base && version !== null && base.version === version ? base : null;
    // scheme: the version scheme the panel should write (and applyDelta checks); a panel from
    // before schemes ignores it and writes scheme 1, which applyDelta accepts too.
    const query = [...(waitS > 0 ? [`wait=${waitS}`] : []), ...(deltaBase ? ["delta=1"] : []), `scheme=${CONFIG_VERSION_SCHEME}`];
    const url = `${this.baseUrl}/api/agent/config${query.length > 0 ? `?${query.join("&")}` : ""}`;
    let res: Response;
    let read: ConfigBody | { value: unknown } | string | null;
    try {
      // fetch decodes br and gzip itself; the header is named so that the panel compresses.
      const headers = this.headers({ "accept-encoding": "br, gzip", ...(version ? { "if-none-match": `"${version}"` } : {}) });
      [res, read] = await request(url, { headers }, signal, (waitS + 15) * 1000, (r, progress): Promise<ConfigBody | { value: unknown } | string | null> =>
        // Node's web streams are async iterables of bytes (the DOM typings do not say so).
        r.status === 200 && r.body ? readConfigBody(timedPieces(r.body as unknown as AsyncIterable<Uint8Array>, progress), { previous: base?.users }) : r.text(),
      );
    } catch (err) {
      return { kind: "error", error: describeFetchError(err, url) };
    }
    if (res.status === 304) return { kind: "unchanged" };
    if (res.status === 401) return { kind: "unauthorized" };
    if (res.status !== 200) return { kind: "error", error: `GET /api/agent/config answered ${res.status}: ${errorText(typeof read === "string" ? read : "")}` };
    if (read === null || typeof read === "string") return { kind: "invalid", error: "the body is not JSON" };
    const fields = "fields" in read ? read.fields : read.value;
    const kind = typeof fields === "object" && fields !== null && "kind" in fields ? (fields as { kind: unknown }).kind : undefined;
    if (kind === "delta") {
      if (!deltaBase) return { kind: "invalid", error: "a delta came although none was asked for" };
      // A delta has no `users`; one that does is refused by its schema, as before.
      return applyDelta(deltaBase, "users" in read && read.users ? { ...read.fields, users: [] } : fields);
    }
    // kind "full" (delta=1), or none: a panel from before deltas, or no delta asked for.
    if (kind !== undefined && kind !== "full") return { kind: "invalid", error: `kind: expected "full" or "delta", got ${JSON.stringify(kind).slice(0, 40)}` };
    const checked = "fields" in read ? checkConfig(kind === "full" ? withoutKind(read.fields) : read.fields, read.users) : checkConfig(read.value, undefined);
    if ("error" in checked) return { kind: "invalid", error: checked.error };
    return { kind: "config", config: checked.config, version: checked.config.version };
  }

  /**
   * POST /api/agent/heartbeat, with `body` as JSON or with no body; "unsupported" from a panel
   * that predates it (404, or 405 behind a proxy that routes the path elsewhere).
   */
  async postHeartbeat(timeoutMs: number, signal?: AbortSignal, body?: HeartbeatBody): Promise<HeartbeatAnswer> {
    const init: RequestInit =
      body === undefined ? { method: "POST", headers: this.headers() } : { method: "POST", headers: this.headers({ "content-type": "application/json" }), body: JSON.stringify(body) };
    try {
      const [res, text] = await request(`${this.baseUrl}/api/agent/heartbeat`, init, signal, timeoutMs);
      if (res.status === 204 || res.status === 200) return "ok";
      if (res.status === 404 || res.status === 405) return { kind: "unsupported", status: res.status };
      if (res.status === 401) return "unauthorized";
      if (res.status === 429 || res.status === 503) return "retry";
      if (body !== undefined && (res.status === 400 || res.status === 413)) return { kind: "rejected", status: res.status, error: errorText(text) };
      return "error";
    } catch {
      return "error";
    }
  }

  async postReport(report: AgentReport, signal?: AbortSignal): Promise<ReportAnswer> {
    const url = `${this.baseUrl}/api/agent/report`;
    let res: Response;
    let text: string;
    try {
      [res, text] = await request(url, { method: "POST", headers: this.headers({ "content-type": "application/json" }), body: JSON.stringify(report) }, signal, 30_000);
    } catch (err) {
      return { kind: "error", error: describeFetchError(err, url) };
    }
    if (res.status === 200) {
      try {
        return { kind: "ack", ack: JSON.parse(text) as AgentReportAck };
      } catch {
        return { kind: "ack", ack: { ok: true, status: "unknown" } };
      }
    }
    if (res.status === 401) return { kind: "unauthorized" };
    if (res.status === 429 || res.status === 503) {
      // No Retry-After header means the default wait, not none (Number(null) would be 0).
      const header = res.headers.get("retry-after");
      const after = header === null || header.trim() === "" ? Number.NaN : Number(header);
      return { kind: "retry", afterS: Number.isFinite(after) && after >= 0 ? Math.min(after, 3600) : 5, error: `${res.status}: ${errorText(text)}`, unavailable: res.status === 503 };
    }
    if (res.status === 400 || res.status === 413) return { kind: "rejected", status: res.status, error: errorText(text) };
    return { kind: "error", error: `POST /api/agent/report answered ${res.status}: ${errorText(text)}` };
  }
}

function withoutKind({ kind: _kind, ...rest }: Record<string, unknown>): Record<string, unknown> {
  return rest;
}

/** The config a delta answer turns `base` into, checked against the version it names. */
function applyDelta(base: AgentConfig, body: unknown): ConfigAnswer {
  const parsed = agentConfigDeltaSchema.safeParse(body);
  if (!parsed.success) return { kind: "delta-failed", error: `the delta is invalid: ${formatZodError(parsed.error)}` };
  const delta = parsed.data;
  const applied = applyUserDelta(base, delta);
  if ("error" in applied) return { kind: "delta-failed", error: applied.error };
  const actual = versionOfConfig(applied.config);
  // A panel from before version schemes writes scheme 1: checked in full (a pass over every
  // user) only when scheme 2 does not match, so a mismatch costs that pass and nothing else does.
  if (actual !== delta.version && legacyVersionOfConfig(applied.config) !== delta.version) {
    return { kind: "delta-failed", error: `the config rebuilt from the delta ${delta.from} → ${delta.version} hashes to ${actual}` };
  }
  return { kind: "config", config: applied.config, version: delta.version, delta: { added: delta.usersAdded.length, removed: delta.usersRemoved.length } };
}

/** The panel's `{error}` message, or the start of the body. */
function errorText(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === "string") return parsed.error;
  } catch {
    // not JSON: fall through
  }
  return text.trim().slice(0, 300) || "(empty body)";
}

function describeFetchError(err: unknown, url: string): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === "TimeoutError" || e.name === "AbortError") return `${url}: timed out`;
  const cause = e.cause?.code ?? e.cause?.message;
  return `${url}: ${cause ?? e.message ?? String(err)}`;
}

/** How long a config body may go without a piece before the request is given up. */
const BODY_IDLE_MS = 15_000;

/** The pieces, telling `progress` of each (a large body is timed by its progress, not as a whole). */
async function* timedPieces(pieces: AsyncIterable<Uint8Array>, progress: () => void): AsyncGenerator<Uint8Array> {
  for await (const piece of pieces) {
    progress();
    yield piece;
  }
}

/**
 * One request with its body (read by `read`, as text by default), ended by `signal` (the agent
 * stopping) or after `timeoutMs`; a reader that calls `progress` for each piece of the body
 * instead gets BODY_IDLE_MS more from each (a million users' config takes longer to read than
 * to answer, on a busy server by far). A per-request controller, with the listener removed
 * afterwards, keeps a long-running agent from piling listeners on its stop signal
 * (AbortSignal.any leaked on some Node 20 releases).
 */
async function request<T = string>(
  url: string,
  init: RequestInit,
  signal: AbortSignal | undefined,
  timeoutMs: number,
  read: (res: Response, progress: () => void) => Promise<T> = (res) => res.text() as Promise<T>,
): Promise<[Response, T]> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const arm = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms / 1000} s`, "TimeoutError")), ms);
  };
  arm(timeoutMs);
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const res = await fetch(url, { ...init, signal: controller.signal });
    return [res, await read(res, () => arm(BODY_IDLE_MS))];
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}
