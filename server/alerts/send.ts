/**
 * One alert POST over node:http(s), with the address guard of address-guard.ts when asked:
 * the name is resolved through a lookup that drops refused addresses, an IP literal is
 * checked before connecting, and the connected socket's remote address is checked before
 * the request is written (nothing is sent to a refused address). Redirects are not followed.
 */
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { guardedLookup, isPrivateAddress, PrivateAddressError, type LookupFn } from "./address-guard";

/** At most this much of an answer is read (Telegram's JSON; webhooks' bodies are never used). */
export const MAX_ANSWER_BYTES = 64 * 1024;

export interface AlertAnswer {
  status: number;
  retryAfter: string | null;
  /** The first MAX_ANSWER_BYTES of the body, as text. */
  text: string;
}

export interface SendOptions {
  timeoutMs: number;
  /** Refuse loopback/private/link-local addresses (webhooks unless ROUTEBOARD_ALERTS_ALLOW_PRIVATE). */
  guard: boolean;
  /** How names are resolved (the system resolver by default; tests map a name to an address). */
  lookup?: LookupFn;
}

export class SendTimeoutError extends Error {
  override name = "TimeoutError";
}

/** A refusal when the connected socket's peer is a refused address (DNS rebinding's last stop), else null. */
export function peerRefusal(socket: net.Socket): PrivateAddressError | null {
  return socket.remoteAddress === undefined || isPrivateAddress(socket.remoteAddress) ? new PrivateAddressError() : null;
}

export function postAlert(url: string, headers: Record<string, string>, body: string, opts: SendOptions): Promise<AlertAnswer> {
  return new Promise<AlertAnswer>((resolve, reject) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      reject(new Error("not a URL"));
      return;
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      reject(new Error("not an http(s) URL"));
      return;
    }
    const host = u.hostname.replace(/^\[|\]$/g, "");
    // An IP literal is never looked up: refused here, before any connection is tried.
    if (opts.guard && net.isIP(host) !== 0 && isPrivateAddress(host)) {
      reject(new PrivateAddressError());
      return;
    }
    const payload = Buffer.from(body, "utf8");
    let settled = false;
    const done = (err: Error | null, answer?: AlertAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(answer!);
    };
    const lookup = opts.guard ? guardedLookup(opts.lookup) : opts.lookup;
    const req = (u.protocol === "https:" ? https : http).request({
      protocol: u.protocol,
      hostname: host,
      port: u.port === "" ? undefined : Number(u.port),
      path: `${u.pathname}${u.search}`,
      method: "POST",
      headers: { ...headers, "content-length": String(payload.length) },
      agent: false,
      ...(lookup ? { lookup: lookup as unknown as net.LookupFunction } : {}),
    });
    const timer = setTimeout(() => done(new SendTimeoutError("no answer within the timeout")), opts.timeoutMs);
    req.once("error", (err) => done(err));
    req.once("socket", (socket) => {
      // The request is written only once the connected peer's address has been checked.
      const check = () => {
        const refused = opts.guard ? peerRefusal(socket) : null;
        if (refused) done(refused);
        else req.end(payload);
      };
      if (socket.connecting) socket.once("connect", check);
      else check();
    });
    req.once("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        if (size >= MAX_ANSWER_BYTES) return;
        const part = chunk.subarray(0, MAX_ANSWER_BYTES - size);
        chunks.push(part);
        size += part.length;
      });
      res.once("error", (err) => done(err));
      const retryAfter = res.headers["retry-after"];
      res.once("end", () => done(null, { status: res.statusCode ?? 0, retryAfter: typeof retryAfter === "string" ? retryAfter : null, text: Buffer.concat(chunks, size).toString("utf8") }));
    });
  });
}
