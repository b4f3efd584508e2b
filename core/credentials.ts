/**
 * Per-subscriber secrets of the protocols that do not take a UUID (issue 26): Trojan's
 * password and Shadowsocks' per-user key are derived from the subscriber's UUID, so they are
 * stable, differ per subscriber, need no column and no change to the agent's users list, and
 * change whenever the UUID (the subscriber's key) is rotated. One-way (SHA-256 with a label per
 * protocol): a Trojan password or SS key seen by a third party gives away neither the UUID nor
 * the other protocols' secrets. The panel (share links) and the agent (core configs) derive
 * alike.
 *
 * Node only (node:crypto): the panel and the agent import it, the browser never does.
 */
import { createHash } from "node:crypto";
import { ss2022KeyBytes } from "./inbound-protocols";

function derive(label: string, uuid: string): Buffer {
  return createHash("sha256").update(`routeboard/${label}/${uuid.toLowerCase()}`).digest();
}

/** The subscriber's Trojan password: 32 hex digits. */
export function trojanPassword(uuid: string): string {
  return derive("trojan", uuid).subarray(0, 16).toString("hex");
}

/**
 * The subscriber's Shadowsocks secret for `method`: for SS-2022 a base64 key of the cipher's
 * exact length (the user's key of Xray's multi-user form), otherwise a 32-hex-digit password.
 */
export function shadowsocksUserSecret(uuid: string, method: string): string {
  const bytes = ss2022KeyBytes(method);
  return bytes === null ? derive("ss", uuid).subarray(0, 16).toString("hex") : derive("ss2022", uuid).subarray(0, bytes).toString("base64");
}
