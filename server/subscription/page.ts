/**
 * The subscriber's own page: what a browser gets from `GET /sub/<token>`. Usage, limit and
 * expiry, one "add to app" link per app with its QR code, and the raw share links. Plain
 * HTML with inline styles and inline SVG (QR codes drawn here): no script, and nothing loaded
 * from anywhere but the operator's https logo, so its CSP allows inline styles, data: images
 * and that one origin.
 *
 * The cluster's brand (core/branding.ts) sets the title, logo, support link and colours; the
 * internal cluster and subscriber names are never shown unless the operator chose to. The
 * page's own words follow the browser's language (page-language.ts).
 */
import QRCode from "qrcode";
import { textOn, type Branding } from "@/core/branding";
import { appLinks } from "@/lib/subscription-links";
import type { BlockReason } from "@/server/usage/access";
import { isRtl, pageDay, pageWords, type PageLanguage } from "./page-language";

/** The page's policy: inline styles and data: images; no script, no fetch, no frame. */
export const SUBSCRIBER_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The policy of a page whose logo is an https URL: that logo's origin may serve images too. */
export function subscriberPageCsp(logo: string | null | undefined): string {
  if (!logo || !logo.startsWith("https:")) return SUBSCRIBER_PAGE_CSP;
  let origin: string;
  try {
    origin = new URL(logo).origin;
  } catch {
    return SUBSCRIBER_PAGE_CSP;
  }
  // A serialised origin is scheme://host[:port]: nothing in it can end the directive.
  if (!/^https:\/\/[a-z0-9.\-[\]:]+$/i.test(origin)) return SUBSCRIBER_PAGE_CSP;
  return SUBSCRIBER_PAGE_CSP.replace("img-src data:", `img-src data: ${origin}`);
}

export interface SubscriberPageInput {
  /** The brand's title (or the neutral default): operator-provided. */
  title: string;
  /** The subscriber's name, only when the operator chose to show it (else null). */
  subscriberName: string | null;
  /** The brand's logo, support link and colours (already validated by brandingSchema). */
  branding?: Pick<Branding, "logo" | "supportUrl" | "accentColor" | "backgroundColor"> | null;
  /** The page's own words' language (Accept-Language); English when absent. */
  lang?: PageLanguage;
  /** The subscription URL (PUBLIC_URL or the request's Host). */
  url: string;
  upBytes: number;
  downBytes: number;
  limitBytes: number | null;
  expiresAt: Date | null;
  /** Why the subscriber (or this device: core/devices.ts) may not connect now (the page says it plainly), or null. */
  blocked: { reason: BlockReason | { kind: "device-limit" | "no-device-id" | "empty-plan" }; message: string } | null;
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
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:var(--bg);color:var(--fg)}
main{max-width:860px;margin:0 auto;padding:24px 16px}
h1{font-size:1.5rem;margin:0 0 4px}h2{font-size:1.1rem;margin:28px 0 8px}
.card{background:#fff;color:#0f172a;border:1px solid #e2e8f0;border-radius:10px;padding:16px;margin:12px 0}
.alert{background:#fef2f2;border-color:#fecaca;color:#991b1b;font-weight:600}
.bar{height:10px;background:#e2e8f0;border-radius:5px;overflow:hidden}.bar>span{display:block;height:100%;background:var(--accent)}
.apps{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:12px;list-style:none;padding:0}
.apps li{background:#fff;color:#0f172a;border:1px solid #e2e8f0;border-radius:10px;padding:12px;text-align:center}
.apps a.add{display:inline-block;margin:6px 0;padding:6px 12px;border-radius:6px;background:var(--accent);color:var(--on-accent);text-decoration:none}
.muted{opacity:.75;font-size:.85rem}
header{display:flex;align-items:center;gap:12px;flex-wrap:wrap}header img{max-height:56px;max-width:160px}
.support{display:inline-block;padding:4px 10px;border-radius:6px;border:1px solid currentColor;color:inherit}
code{word-break:break-all;font-size:.8rem;background:#f1f5f9;padding:2px 4px;border-radius:4px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:8px 0}dt{color:#64748b}dd{margin:0}
`;

const HEX = /^#[0-9a-f]{6}$/i;

/** The colour variables: validated again here, since a colour is written into CSS. */
function colourRule(b: SubscriberPageInput["branding"]): string {
  const accent = b?.accentColor && HEX.test(b.accentColor) ? b.accentColor : "#0f172a";
  const bg = b?.backgroundColor && HEX.test(b.backgroundColor) ? b.backgroundColor : "#f1f5f9";
  return `:root{--accent:${accent};--on-accent:${textOn(accent)};--bg:${bg};--fg:${textOn(bg)}}`;
}

export async function renderSubscriberPage(p: SubscriberPageInput): Promise<string> {
  const e = escapeHtml;
  const lang = p.lang ?? "en";
  const w = pageWords(lang);
  const used = p.upBytes + p.downBytes;
  const percent = p.limitBytes ? Math.min(100, Math.round((used / p.limitBytes) * 100)) : null;
  const apps = appLinks(p.url, p.title);
  const [urlQr, appQrs, linkQrs] = await Promise.all([
    qrSvg(p.url, w.qrOfUrl),
    Promise.all(apps.map((a) => qrSvg(a.href, w.qrFor(a.app)))),
    Promise.all(p.links.map((l) => qrSvg(l.link, w.qrOf(l.name)))),
  ]);
  const logo = p.branding?.logo ?? null;
  const support = p.branding?.supportUrl ?? null;
  const out: string[] = [];
  out.push(
    "<!doctype html>",
    // The URL holds the subscriber's token: no Referer carries it to the logo's host or the support link.
    `<html lang="${lang}" dir="${isRtl(lang) ? "rtl" : "ltr"}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex"><meta name="referrer" content="no-referrer">`,
    `<title>${e(p.title)} — ${e(w.titleSuffix)}</title><style>${colourRule(p.branding)}${STYLE}</style></head><body><main>`,
    "<header>",
    logo ? `<img src="${e(logo)}" alt="" referrerpolicy="no-referrer" data-testid="logo">` : "",
    `<h1>${e(p.title)}</h1>`,
    support ? `<a class="support" href="${e(support)}" rel="noopener noreferrer" data-testid="support">${e(w.support)}</a>` : "",
    "</header>",
  );
  if (p.subscriberName !== null) out.push(`<p class="muted" data-testid="subscriber-name">${e(w.subscriptionOf(p.subscriberName))}</p>`);
  if (p.blocked) out.push(`<div class="card alert" role="alert" data-testid="blocked">${e(p.blocked.message)}</div>`);
  out.push(`<section class="card" aria-label="${e(w.usage)}"><dl>`);
  const usedText = p.limitBytes ? w.ofLimit(formatBytes(used), formatBytes(p.limitBytes)) : formatBytes(used);
  out.push(`<dt>${e(w.used)}</dt><dd data-testid="usage">${e(usedText)} (${e(w.upload)} ${e(formatBytes(p.upBytes))}, ${e(w.download)} ${e(formatBytes(p.downBytes))})</dd>`);
  out.push(`<dt>${e(w.limit)}</dt><dd data-testid="limit">${p.limitBytes ? e(formatBytes(p.limitBytes)) : e(w.noLimit)}</dd>`);
  const expired = p.expiresAt !== null && p.blocked?.reason.kind === "expired";
  out.push(`<dt>${e(expired ? w.expired : w.expires)}</dt><dd data-testid="expiry">${p.expiresAt ? e(pageDay(p.expiresAt, lang)) : e(w.never)}</dd>`);
  out.push("</dl>");
  if (percent !== null) out.push(`<div class="bar" role="progressbar" aria-label="${e(w.trafficUsed)}" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${percent}"><span style="width:${percent}%"></span></div>`);
  out.push("</section>");

  out.push(`<h2>${e(w.subscriptionUrl)}</h2><div class="card" style="text-align:center">`, urlQr, `<p><code dir="ltr" data-testid="subscription-url">${e(p.url)}</code></p>`);
  out.push(`<p class="muted">${e(w.addHint)}</p></div>`);

  out.push(`<h2>${e(w.addToYourApp)}</h2><ul class="apps">`);
  apps.forEach((a, i) => {
    out.push(`<li data-app="${e(a.id)}"><div><strong>${e(a.app)}</strong></div><div class="muted">${e(a.platforms)}</div>`);
    out.push(`<a class="add" href="${e(a.href)}">${e(w.addTo(a.app.split(" (")[0]!))}</a>`, appQrs[i]!, "</li>");
  });
  out.push("</ul>");

  out.push(`<h2>${e(w.shareLinks)}</h2><p class="muted">${e(w.shareLinksHint)}</p>`);
  p.links.forEach((l, i) => {
    out.push(`<details class="card"><summary>${e(l.name)}</summary>`, linkQrs[i]!, `<p><code dir="ltr" data-testid="share-link">${e(l.link)}</code></p></details>`);
  });
  out.push("</main></body></html>");
  return out.join("\n");
}
