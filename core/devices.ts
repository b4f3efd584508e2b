/**
 * Device limits (issue 27, point 3): which device may fetch a subscription. Apps that send a
 * device id (`x-hwid`, with `x-device-os`, `x-ver-os`, `x-device-model`: README, "Device
 * limits") are counted per subscriber; over the limit a new device gets one informational entry
 * instead of the servers. Pure, so /sub (server/subscription/devices.ts), the dashboard and the
 * unit tests share one rule.
 */

/** A device id longer than this is cut: real apps send 16–64 characters. */
export const DEVICE_ID_MAX = 128;
/** The OS, OS version and model an app names itself with: display text only. */
export const DEVICE_TEXT_MAX = 64;
export const DEVICE_USER_AGENT_MAX = 256;
/**
 * Devices kept per subscriber whatever the limit: an app (or anyone with the link) may send a
 * new id on every fetch, and each would otherwise be a new row. Without a limit, the least
 * recently seen device makes room; a limit is at most this, so with one nothing is evicted.
 */
export const DEVICES_STORED_MAX = 32;
export const DEVICE_LIMIT_MAX = DEVICES_STORED_MAX;

/** What a subscriber's app fetches without a device id in a cluster: served, or refused. */
export const DEVICELESS_FETCHES = ["allow", "refuse"] as const;
export type DevicelessFetches = (typeof DEVICELESS_FETCHES)[number];

export interface DeviceHeaders {
  hwid: string | null;
  os: string | null;
  osVersion: string | null;
  model: string | null;
  userAgent: string | null;
}

// C0 and C1 controls, and the format characters that reorder or hide text (bidi overrides and
// isolates, zero-width marks, BOM): a device name is shown to operators as it came.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A header's value as stored: the first value when repeated, unsafe characters dropped, spaces
 * trimmed, cut at `max` characters (never inside a surrogate pair); null when nothing is left.
 */
export function cleanDeviceText(value: string | readonly string[] | null | undefined, max: number): string | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (typeof raw !== "string") return null;
  const cleaned = Array.from(utf8FromHeader(raw).replace(UNSAFE, "").trim()).slice(0, max).join("").trim();
  return cleaned === "" ? null : cleaned;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Node reads header values byte by byte as Latin-1, so an app's UTF-8 ("Pixel 8 – Олег")
 * arrives as one character per byte. Decoded as UTF-8 when the bytes are valid UTF-8; kept
 * as read otherwise (a real Latin-1 value, or already decoded text).
 */
export function utf8FromHeader(raw: string): string {
  let high = false;
  const bytes = new Uint8Array(raw.length);
  for (let k = 0; k < raw.length; k++) {
    const c = raw.charCodeAt(k);
    if (c > 0xff) return raw;
    if (c >= 0x80) high = true;
    bytes[k] = c;
  }
  if (!high) return raw;
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return raw;
  }
}

/** The device an app says it is, from the request headers (lower-case names, as node gives them). */
export function deviceFromHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): DeviceHeaders {
  return {
    hwid: cleanDeviceText(headers["x-hwid"], DEVICE_ID_MAX),
    os: cleanDeviceText(headers["x-device-os"], DEVICE_TEXT_MAX),
    osVersion: cleanDeviceText(headers["x-ver-os"], DEVICE_TEXT_MAX),
    model: cleanDeviceText(headers["x-device-model"], DEVICE_TEXT_MAX),
    userAgent: cleanDeviceText(headers["user-agent"], DEVICE_USER_AGENT_MAX),
  };
}

export interface KnownDevice {
  hwid: string;
  firstSeenAt: number;
  lastSeenAt: number;
}

export type DeviceDecision =
  /** Served. `record`: nothing to store (no id), refresh the known device, or add it (evicting `evict` first). */
  | { allowed: true; record: "none" | "touch" | "add"; evict?: string }
  /** One informational entry instead of the servers. */
  | { allowed: false; reason: "no-device-id" } | { allowed: false; reason: "device-limit"; limit: number };

/**
 * Whether this fetch is served, given the subscriber's known devices, their limit (null = none)
 * and the cluster's rule for fetches without a device id.
 *
 * - No limit: always served (the subscriber is unaffected); a device id is still recorded.
 * - With a limit, no device id: served or refused as the cluster says.
 * - A known device: served while it is among the `limit` devices seen first; a limit lowered
 *   below the count thus keeps the oldest devices and refuses the newest, until the operator
 *   removes one.
 * - A new device: added while fewer than `limit` are known, else refused and not recorded.
 */
export function deviceAccess(input: {
  hwid: string | null;
  devices: readonly KnownDevice[];
  limit: number | null;
  devicelessFetches: DevicelessFetches;
  storedMax?: number;
}): DeviceDecision {
  const { hwid, devices, limit } = input;
  const storedMax = input.storedMax ?? DEVICES_STORED_MAX;
  if (hwid === null) {
    if (limit !== null && input.devicelessFetches === "refuse") return { allowed: false, reason: "no-device-id" };
    return { allowed: true, record: "none" };
  }
  const known = devices.some((d) => d.hwid === hwid);
  if (known) {
    if (limit === null) return { allowed: true, record: "touch" };
    const rank = [...devices].sort(byFirstSeen).findIndex((d) => d.hwid === hwid);
    return rank < limit ? { allowed: true, record: "touch" } : { allowed: false, reason: "device-limit", limit };
  }
  if (limit !== null && devices.length >= limit) return { allowed: false, reason: "device-limit", limit };
  if (devices.length >= storedMax) {
    const stalest = devices.reduce((a, b) => (b.lastSeenAt < a.lastSeenAt || (b.lastSeenAt === a.lastSeenAt && b.hwid < a.hwid) ? b : a));
    return { allowed: true, record: "add", evict: stalest.hwid };
  }
  return { allowed: true, record: "add" };
}

/** First seen first; the id breaks ties, so every instance ranks the same devices alike. */
function byFirstSeen(a: KnownDevice, b: KnownDevice): number {
  return a.firstSeenAt - b.firstSeenAt || (a.hwid < b.hwid ? -1 : a.hwid > b.hwid ? 1 : 0);
}

/** "iPhone 15 · iOS 17.4", or the app's User-Agent, or "Unknown device". */
export function deviceLabel(d: { os: string | null; osVersion: string | null; model: string | null; userAgent: string | null }): string {
  const os = [d.os, d.osVersion].filter(Boolean).join(" ");
  const parts = [d.model, os].filter(Boolean);
  return parts.length > 0 ? parts.join(" · ") : (d.userAgent ?? "Unknown device");
}
