/**
 * Which answer a VPN app gets from `GET /sub/<token>` when it sends no `?format`: the one
 * table of User-Agent patterns (README, Contracts). The first row that matches wins, so
 * rows for apps whose User-Agent also names another family come first: Hiddify says
 * "like ClashMeta v2ray sing-box", NekoBox says "Prefer ClashMeta Format".
 */
import type { SubscriptionFormat } from "./formats";

/** What a User-Agent picks: an app format, or the subscriber's HTML page for a browser. */
export type DetectedFormat = Exclude<SubscriptionFormat, "json"> | "html";

export interface UserAgentRow {
  /** The apps the row is for (README, tests). */
  apps: string;
  pattern: RegExp;
  format: DetectedFormat;
}

export const USER_AGENT_TABLE: readonly UserAgentRow[] = [
  { apps: "Hiddify (HiddifyNext)", pattern: /hiddify/i, format: "singbox" },
  { apps: "NekoBox, NekoRay", pattern: /neko(box|ray)/i, format: "base64" },
  { apps: "sing-box, SFA, SFI, SFM, SFT", pattern: /sing-box|^SF[AIMT]\//i, format: "singbox" },
  { apps: "Clash Verge, Clash Meta, ClashX, FlClash, mihomo, Stash", pattern: /clash|mihomo|^stash\//i, format: "clash" },
  { apps: "v2rayN, v2rayNG, Streisand, Shadowrocket, Happ", pattern: /v2rayN|streisand|shadowrocket|^happ\//i, format: "base64" },
  { apps: "a browser (Mozilla/… and none of the above)", pattern: /^Mozilla\//, format: "html" },
];

/** Anything else (curl, unknown apps, no User-Agent): share links, as before detection. */
export const DEFAULT_FORMAT: DetectedFormat = "base64";

export function formatForUserAgent(userAgent: string | null | undefined): DetectedFormat {
  const ua = (userAgent ?? "").slice(0, 512);
  for (const row of USER_AGENT_TABLE) if (row.pattern.test(ua)) return row.format;
  return DEFAULT_FORMAT;
}
