/**
 * The subscriber's own page: what a browser gets from `GET /sub/<token>`. Usage, limit and
 * expiry, one "add to app" link per app with its QR code, and the raw share links. Plain
 * HTML with inline styles and inline SVG (QR codes drawn here): no script, nothing loaded
 * from anywhere, so its CSP allows inline styles and nothing else.
 */
import QRCode from "qrcode";
import { appLinks } from "@/lib/subscription-links";
import type { BlockReason } from "@/server/usage/access";
import { formatDay } from "./formats";

/** The page's policy: inline styles and data: images; no script, no fetch, no frame. */
export const SUBSCRIBER_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export interface SubscriberPageInput {
  /** The profile name (cluster name): operator-provided. */
  title: string;
  /** The subscriber's name: operator-provided. */
  subscriberName: string;
  /** The subscription URL (PUBLIC_URL or the request's Host). */
  url: string;
  upBytes: number;
  downBytes: number;
  limitBytes: number | null;
  expiresAt: Date | null;
  /** Why the subscriber (or this device: core/devices.ts) may not connect now (the page says it plainly), or null. */
  blocked: { reason: BlockReason | { kind: "device-limit" | "no-device-id" }; message: string } | null;
  /** Share links with the names apps show for them. */
  links: Array<{ name: string; link: string }>;
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${Math.max(0, Math.floor(n))} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(0)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(n < 10 * 1024 ** 3 ? 2 : 1)} GB`;
}

async function qrSvg(text: string, label: string): Promise<string> {
  const svg = await QRCode.toString(text, { type: "svg", margin: 1, errorCorrectionLevel: "M" });
  // The library's SVG has no size or name: give it both (role=img with the label).
  // Inline SVG needs no xmlns in HTML: dropped, so the page names no URL but its own.
  return svg.replace(' xmlns="http://www.w3.org/2000/svg"', "").replace("<svg ", `<svg role="img" aria-label="${escapeHtml(label)}" width="180" height="180" `);
}

const STYLE = `
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f1f5f9;color:#0f172a}
main{max-width:860px;margin:0 auto;padding:24px 16px}
h1{font-size:1.5rem;margin:0 0 4px}h2{font-size:1.1rem;margin:28px 0 8px}
.card{background:#fff;border:1px solid #e2e8f0;border-radius:10px;padding:16px;margin:12px 0}
.alert{background:#fef2f2;border-color:#fecaca;color:#991b1b;font-weight:600}
.bar{height:10px;background:#e2e8f0;border-radius:5px;overflow:hidden}.bar>span{display:block;height:100%;background:#0ea5e9}
.apps{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:12px;list-style:none;padding:0}
.apps li{background:#fff;border:1px solid #e2e8f0;border-radius:10px;padding:12px;text-align:center}
.apps a.add{display:inline-block;margin:6px 0;padding:6px 12px;border-radius:6px;background:#0f172a;color:#fff;text-decoration:none}
.muted{color:#64748b;font-size:.85rem}
code{word-break:break-all;font-size:.8rem;background:#f1f5f9;padding:2px 4px;border-radius:4px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:8px 0}dt{color:#64748b}dd{margin:0}
`;

export async function renderSubscriberPage(p: SubscriberPageInput): Promise<string> {
  const e = escapeHtml;
  const used = p.upBytes + p.downBytes;
  const percent = p.limitBytes ? Math.min(100, Math.round((used / p.limitBytes) * 100)) : null;
  const apps = appLinks(p.url, p.title);
  const [urlQr, appQrs, linkQrs] = await Promise.all([
    qrSvg(p.url, "QR code of the subscription URL"),
    Promise.all(apps.map((a) => qrSvg(a.href, `QR code for ${a.app}`))),
    Promise.all(p.links.map((l) => qrSvg(l.link, `QR code of ${l.name}`))),
  ]);
  const out: string[] = [];
  out.push(
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">',
    `<title>${e(p.title)} — subscription</title><style>${STYLE}</style></head><body><main>`,
    `<h1>${e(p.title)}</h1><p class="muted">Subscription of ${e(p.subscriberName)}</p>`,
  );
  if (p.blocked) out.push(`<div class="card alert" role="alert" data-testid="blocked">${e(p.blocked.message)}</div>`);
  out.push('<section class="card" aria-label="Usage"><dl>');
  out.push(`<dt>Used</dt><dd data-testid="usage">${e(formatBytes(used))}${p.limitBytes ? ` of ${e(formatBytes(p.limitBytes))}` : ""} (upload ${e(formatBytes(p.upBytes))}, download ${e(formatBytes(p.downBytes))})</dd>`);
  out.push(`<dt>Limit</dt><dd data-testid="limit">${p.limitBytes ? e(formatBytes(p.limitBytes)) : "No limit"}</dd>`);
  const expired = p.expiresAt !== null && p.blocked?.reason.kind === "expired";
  out.push(`<dt>${expired ? "Expired" : "Expires"}</dt><dd data-testid="expiry">${p.expiresAt ? e(formatDay(p.expiresAt)) : "Never"}</dd>`);
  out.push("</dl>");
  if (percent !== null) out.push(`<div class="bar" role="progressbar" aria-label="Traffic used" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${percent}"><span style="width:${percent}%"></span></div>`);
  out.push("</section>");

  out.push('<h2>Subscription URL</h2><div class="card" style="text-align:center">', urlQr, `<p><code data-testid="subscription-url">${e(p.url)}</code></p>`);
  out.push('<p class="muted">Add it in your VPN app as a subscription, or scan the code with the app.</p></div>');

  out.push('<h2>Add to your app</h2><ul class="apps">');
  apps.forEach((a, i) => {
    out.push(`<li data-app="${e(a.id)}"><div><strong>${e(a.app)}</strong></div><div class="muted">${e(a.platforms)}</div>`);
    out.push(`<a class="add" href="${e(a.href)}">Add to ${e(a.app.split(" (")[0]!)}</a>`, appQrs[i]!, "</li>");
  });
  out.push("</ul>");

  out.push('<h2>Share links</h2><p class="muted">For apps that take one server at a time.</p>');
  p.links.forEach((l, i) => {
    out.push(`<details class="card"><summary>${e(l.name)}</summary>`, linkQrs[i]!, `<p><code data-testid="share-link">${e(l.link)}</code></p></details>`);
  });
  out.push("</main></body></html>");
  return out.join("\n");
}
