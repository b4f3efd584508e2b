import { describe, expect, it } from "vitest";
import { appLinks, subscriptionUrl } from "@/lib/subscription-links";
import { blockMessage } from "./formats";
import { escapeHtml, renderSubscriberPage, SUBSCRIBER_PAGE_CSP, subscriberPageCsp, type SubscriberPageInput } from "./page";
import { pageBlockMessage } from "./page-language";

const url = subscriptionUrl("https://panel.example.com/", "tok_abcdefgh12");
const base: SubscriberPageInput = {
  title: `<script>alert("t")</script> & "Fleet"`,
  subscriberName: `Zoë <img src=x onerror=alert(1)>`,
  url,
  upBytes: 1024 ** 2,
  downBytes: 3 * 1024 ** 3,
  limitBytes: 10 * 1024 ** 3,
  expiresAt: new Date("2027-01-15T00:00:00Z"),
  blocked: null,
  links: [{ name: `🇺🇸 New York </summary><script>x</script>`, link: "vless://6f1c6c1e-6c2a-4d8e-9d8c-0a1b2c3d4e5f@198.51.100.10:443?security=none#%F0%9F%87%BA%F0%9F%87%B8" }],
};

describe("the subscriber's page", () => {
  it("escapes every operator-provided string", async () => {
    const html = await renderSubscriberPage(base);
    expect(html).not.toContain("<script");
    expect(html).not.toContain("<img");
    expect(html).toContain(escapeHtml(base.title));
    expect(html).toContain("Zoë &lt;img src=x onerror=alert(1)&gt;");
    expect(html).toContain("🇺🇸 New York &lt;/summary&gt;&lt;script&gt;x&lt;/script&gt;");
  });

  it("shows usage, limit and expiry", async () => {
    const html = await renderSubscriberPage(base);
    expect(html).toContain('data-testid="usage">3.00 GB of 10.0 GB (upload 1.0 MB, download 3.00 GB)');
    expect(html).toContain('data-testid="limit">10.0 GB');
    expect(html).toContain('data-testid="expiry">15 Jan 2027');
    expect(html).toContain('aria-valuenow="30"');
  });

  it("has every app's deep link with a QR code, the subscription URL and the share links", async () => {
    const html = await renderSubscriberPage(base);
    expect(url).toBe("https://panel.example.com/sub/tok_abcdefgh12");
    const apps = appLinks(url, base.title);
    for (const a of apps) expect(html).toContain(`href="${escapeHtml(a.href)}"`);
    expect(apps.map((a) => a.href.split(":")[0])).toEqual(["clash", "stash", "sing-box", "hiddify", "v2rayng", "streisand", "happ", "shadowrocket"]);
    expect(apps.find((a) => a.id === "clash")!.href).toBe(`clash://install-config?url=${encodeURIComponent(`${url}?format=clash`)}&name=${encodeURIComponent(base.title)}`);
    expect(apps.find((a) => a.id === "singbox")!.href).toBe(`sing-box://import-remote-profile?url=${encodeURIComponent(`${url}?format=singbox`)}#${encodeURIComponent(base.title)}`);
    expect(apps.find((a) => a.id === "hiddify")!.href.startsWith(`hiddify://import/${url}#`)).toBe(true);
    expect(apps.find((a) => a.id === "v2rayng")!.href.startsWith(`v2rayng://install-sub?url=${encodeURIComponent(url)}`)).toBe(true);
    expect(apps.find((a) => a.id === "shadowrocket")!.href.startsWith(`shadowrocket://add/sub://${Buffer.from(url).toString("base64")}?`)).toBe(true);
    // One QR per app, one for the URL, one per share link: inline SVG.
    expect(html.match(/<svg role="img"/g)).toHaveLength(apps.length + 1 + base.links.length);
    expect(html).toContain(`data-testid="subscription-url">${url}</code>`);
    expect(html).toContain(`data-testid="share-link">${escapeHtml(base.links[0]!.link)}</code>`);
  });

  it("loads nothing from anywhere and runs no script", async () => {
    const html = await renderSubscriberPage(base);
    // Every http(s) URL on the page is the subscription's own.
    const urls = html.match(/https?:\/\/[^\s"'<>&)]+/g) ?? [];
    for (const u of urls) expect(u.startsWith("https://panel.example.com/sub/tok_abcdefgh12")).toBe(true);
    expect(html).not.toMatch(/<(script|link|iframe|object|embed)\b/i);
    // No tag has an event handler or loads a source (escaped text may say anything).
    for (const tag of html.match(/<[a-z][^>]*>/gi) ?? []) expect(tag).not.toMatch(/\s(on[a-z]+|src|srcset|xlink:href)=/i);
    expect(SUBSCRIBER_PAGE_CSP).toContain("default-src 'none'");
    expect(SUBSCRIBER_PAGE_CSP).not.toContain("script-src");
  });

  it("says plainly why a limited or expired subscriber cannot connect", async () => {
    const reason = { kind: "expired" as const, at: new Date("2026-12-01T00:00:00Z") };
    const html = await renderSubscriberPage({ ...base, expiresAt: reason.at, blocked: { reason, message: blockMessage(reason) } });
    expect(html).toContain('role="alert" data-testid="blocked">⛔ Subscription expired on 1 Dec 2026');
    expect(html).toContain("<dt>Expired</dt>");
  });

  it("shows no subscriber name unless the operator chose to", async () => {
    const html = await renderSubscriberPage({ ...base, subscriberName: null });
    expect(html).not.toContain("Zoë");
    expect(html).not.toContain("subscriber-name");
  });

  it("wears the brand: logo without a Referer, support link, colours as CSS variables", async () => {
    const branding = { logo: "https://cdn.example.net/l.png", supportUrl: "mailto:help@example.net", accentColor: "#ffee00", backgroundColor: "#0a0a0a" };
    const html = await renderSubscriberPage({ ...base, branding });
    expect(html).toContain('<img src="https://cdn.example.net/l.png" alt="" referrerpolicy="no-referrer" data-testid="logo">');
    expect(html).toContain('<meta name="referrer" content="no-referrer">');
    expect(html).toContain('href="mailto:help@example.net" rel="noopener noreferrer" data-testid="support">Support</a>');
    // A light accent gets dark text on it; a dark background gets white text.
    expect(html).toContain(":root{--accent:#ffee00;--on-accent:#0f172a;--bg:#0a0a0a;--fg:#ffffff}");
    expect(subscriberPageCsp(branding.logo)).toBe(SUBSCRIBER_PAGE_CSP.replace("img-src data:", "img-src data: https://cdn.example.net"));
  });

  it("writes no colour that is not #rrggbb into its CSS, and allows no logo origin but an https one", async () => {
    const html = await renderSubscriberPage({ ...base, branding: { logo: null, supportUrl: null, accentColor: "red}body{display:none", backgroundColor: "#12345" } });
    expect(html).not.toContain("display:none");
    expect(html).toContain(":root{--accent:#0f172a;--on-accent:#ffffff;--bg:#f1f5f9;--fg:#0f172a}");
    for (const logo of [null, "data:image/png;base64,AAAA", "http://x.example/l.png", "javascript:alert(1)"]) expect(subscriberPageCsp(logo)).toBe(SUBSCRIBER_PAGE_CSP);
  });

  it("speaks the browser's language, right to left for Persian, and leaves operator text as written", async () => {
    const reason = { kind: "limited" as const, usedBytes: 2, limitBytes: 1, renewsAt: null };
    const fa = await renderSubscriberPage({ ...base, lang: "fa", blocked: { reason, message: pageBlockMessage(reason, "fa") } });
    expect(fa).toContain('<html lang="fa" dir="rtl">');
    expect(fa).toContain("افزودن به برنامه");
    expect(fa).toContain("⛔ حجم ترافیک به پایان رسید");
    expect(fa).toContain(escapeHtml(base.title));
    // Links stay left to right inside the right-to-left page.
    expect(fa).toContain('<code dir="ltr" data-testid="subscription-url">');
    const ru = await renderSubscriberPage({ ...base, lang: "ru" });
    expect(ru).toContain('<html lang="ru" dir="ltr">');
    expect(ru).toContain("Добавить в приложение");
    expect(ru).toContain("3.00 GB из 10.0 GB");
    expect(ru).toContain("15 января 2027");
    const zh = await renderSubscriberPage({ ...base, lang: "zh" });
    expect(zh).toContain("添加到应用");
    expect(zh).toContain("2027年1月15日");
  });
});
