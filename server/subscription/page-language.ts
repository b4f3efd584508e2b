/**
 * The language of the subscriber's public page: its own words follow the browser's
 * Accept-Language (English by default; Russian, Persian and Chinese are the languages of
 * this field's users). Operator text (title, route names) is shown as written.
 */
import type { BlockReason } from "@/server/usage/access";
import { formatDay, formatDayMonth } from "./formats";

export const PAGE_LANGUAGES = ["en", "ru", "fa", "zh"] as const;
export type PageLanguage = (typeof PAGE_LANGUAGES)[number];

/** Entries looked at: a header is client input, and no browser sends more than a handful. */
const MAX_ENTRIES = 32;

/**
 * The best page language for an Accept-Language header (RFC 9110 §12.5.4): the supported
 * language with the highest q (first listed on a tie), matched by primary subtag, so
 * `zh-CN`, `zh-Hant-TW` and `fa-IR` count; q=0 refuses. Anything else, or nothing: English.
 */
export function pickPageLanguage(header: string | null | undefined): PageLanguage {
  if (!header) return "en";
  let best: { lang: PageLanguage; q: number } | null = null;
  for (const part of header.slice(0, 4096).split(",").slice(0, MAX_ENTRIES)) {
    const [rawTag, ...params] = part.split(";");
    const tag = rawTag!.trim().toLowerCase();
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*(.*?)\s*$/i.exec(p);
      if (m) q = /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(m[1]!) ? Number(m[1]) : -1;
    }
    if (!(q > 0)) continue;
    const primary = tag === "*" ? "en" : tag.split("-")[0]!;
    const lang = (PAGE_LANGUAGES as readonly string[]).includes(primary) ? (primary as PageLanguage) : null;
    if (lang && (!best || q > best.q)) best = { lang, q };
  }
  return best?.lang ?? "en";
}

/** Right-to-left scripts among the page's languages. */
export function isRtl(lang: PageLanguage): boolean {
  return lang === "fa";
}

export interface PageWords {
  titleSuffix: string;
  subscriptionOf: (name: string) => string;
  usage: string;
  used: string;
  ofLimit: (used: string, limit: string) => string;
  upload: string;
  download: string;
  limit: string;
  noLimit: string;
  expires: string;
  expired: string;
  never: string;
  trafficUsed: string;
  subscriptionUrl: string;
  addHint: string;
  addToYourApp: string;
  addTo: (app: string) => string;
  shareLinks: string;
  shareLinksHint: string;
  qrOfUrl: string;
  qrFor: (app: string) => string;
  qrOf: (name: string) => string;
  support: string;
  expiredOn: (day: string) => string;
  limitRenews: (day: string) => string;
  limitContact: string;
  deviceLimit: (limit: number) => string;
  noDeviceId: string;
}

const WORDS: Record<PageLanguage, PageWords> = {
  en: {
    titleSuffix: "subscription",
    subscriptionOf: (n) => `Subscription of ${n}`,
    usage: "Usage",
    used: "Used",
    ofLimit: (u, l) => `${u} of ${l}`,
    upload: "upload",
    download: "download",
    limit: "Limit",
    noLimit: "No limit",
    expires: "Expires",
    expired: "Expired",
    never: "Never",
    trafficUsed: "Traffic used",
    subscriptionUrl: "Subscription URL",
    addHint: "Add it in your VPN app as a subscription, or scan the code with the app.",
    addToYourApp: "Add to your app",
    addTo: (a) => `Add to ${a}`,
    shareLinks: "Share links",
    shareLinksHint: "For apps that take one server at a time.",
    qrOfUrl: "QR code of the subscription URL",
    qrFor: (a) => `QR code for ${a}`,
    qrOf: (n) => `QR code of ${n}`,
    support: "Support",
    expiredOn: (d) => `⛔ Subscription expired on ${d} — contact your provider to renew`,
    limitRenews: (d) => `⛔ Traffic limit reached — renews on ${d}`,
    limitContact: "⛔ Traffic limit reached — contact your provider to renew",
    deviceLimit: (n) => `⛔ Device limit reached (${n}) — remove a device or contact your provider`,
    noDeviceId: "⛔ This app sends no device id — use an app that does, or contact your provider",
  },
  ru: {
    titleSuffix: "подписка",
    subscriptionOf: (n) => `Подписка: ${n}`,
    usage: "Трафик",
    used: "Использовано",
    ofLimit: (u, l) => `${u} из ${l}`,
    upload: "отправлено",
    download: "получено",
    limit: "Лимит",
    noLimit: "Без лимита",
    expires: "Действует до",
    expired: "Истекла",
    never: "Бессрочно",
    trafficUsed: "Использованный трафик",
    subscriptionUrl: "Ссылка на подписку",
    addHint: "Добавьте её в VPN-приложение как подписку или отсканируйте код приложением.",
    addToYourApp: "Добавить в приложение",
    addTo: (a) => `Добавить в ${a}`,
    shareLinks: "Ссылки на серверы",
    shareLinksHint: "Для приложений, которые принимают по одному серверу.",
    qrOfUrl: "QR-код ссылки на подписку",
    qrFor: (a) => `QR-код для ${a}`,
    qrOf: (n) => `QR-код: ${n}`,
    support: "Поддержка",
    expiredOn: (d) => `⛔ Подписка истекла ${d} — обратитесь к провайдеру, чтобы продлить`,
    limitRenews: (d) => `⛔ Лимит трафика исчерпан — обновится ${d}`,
    limitContact: "⛔ Лимит трафика исчерпан — обратитесь к провайдеру, чтобы продлить",
    deviceLimit: (n) => `⛔ Достигнут лимит устройств (${n}) — удалите устройство или обратитесь к провайдеру`,
    noDeviceId: "⛔ Это приложение не сообщает идентификатор устройства — используйте другое приложение или обратитесь к провайдеру",
  },
  fa: {
    titleSuffix: "اشتراک",
    subscriptionOf: (n) => `اشتراک ${n}`,
    usage: "مصرف",
    used: "مصرف‌شده",
    ofLimit: (u, l) => `${u} از ${l}`,
    upload: "ارسال",
    download: "دریافت",
    limit: "سقف حجم",
    noLimit: "بدون محدودیت",
    expires: "انقضا",
    expired: "منقضی شده",
    never: "هرگز",
    trafficUsed: "ترافیک مصرف‌شده",
    subscriptionUrl: "نشانی اشتراک",
    addHint: "آن را به‌عنوان اشتراک در برنامهٔ VPN خود اضافه کنید، یا کد را با برنامه اسکن کنید.",
    addToYourApp: "افزودن به برنامه",
    addTo: (a) => `افزودن به ${a}`,
    shareLinks: "لینک‌های اشتراک‌گذاری",
    shareLinksHint: "برای برنامه‌هایی که هر بار یک سرور می‌پذیرند.",
    qrOfUrl: "کد QR نشانی اشتراک",
    qrFor: (a) => `کد QR برای ${a}`,
    qrOf: (n) => `کد QR ${n}`,
    support: "پشتیبانی",
    expiredOn: (d) => `⛔ اشتراک در ${d} منقضی شد — برای تمدید با ارائه‌دهنده تماس بگیرید`,
    limitRenews: (d) => `⛔ حجم ترافیک به پایان رسید — در ${d} تمدید می‌شود`,
    limitContact: "⛔ حجم ترافیک به پایان رسید — برای تمدید با ارائه‌دهنده تماس بگیرید",
    deviceLimit: (n) => `⛔ به سقف تعداد دستگاه‌ها (${n}) رسیده‌اید — یک دستگاه را حذف کنید یا با ارائه‌دهنده تماس بگیرید`,
    noDeviceId: "⛔ این برنامه شناسهٔ دستگاه نمی‌فرستد — از برنامهٔ دیگری استفاده کنید یا با ارائه‌دهنده تماس بگیرید",
  },
  zh: {
    titleSuffix: "订阅",
    subscriptionOf: (n) => `${n} 的订阅`,
    usage: "用量",
    used: "已用",
    ofLimit: (u, l) => `${u} / ${l}`,
    upload: "上传",
    download: "下载",
    limit: "流量上限",
    noLimit: "不限量",
    expires: "到期时间",
    expired: "已到期",
    never: "永不过期",
    trafficUsed: "已用流量",
    subscriptionUrl: "订阅链接",
    addHint: "在 VPN 应用中将其添加为订阅，或用应用扫描二维码。",
    addToYourApp: "添加到应用",
    addTo: (a) => `添加到 ${a}`,
    shareLinks: "分享链接",
    shareLinksHint: "适用于每次只能添加一个服务器的应用。",
    qrOfUrl: "订阅链接二维码",
    qrFor: (a) => `${a} 二维码`,
    qrOf: (n) => `${n} 二维码`,
    support: "联系客服",
    expiredOn: (d) => `⛔ 订阅已于 ${d} 到期 — 请联系服务商续订`,
    limitRenews: (d) => `⛔ 流量已用完 — 将于 ${d} 重置`,
    limitContact: "⛔ 流量已用完 — 请联系服务商续订",
    deviceLimit: (n) => `⛔ 已达到设备数量上限（${n}）— 请移除一台设备或联系服务商`,
    noDeviceId: "⛔ 此应用不发送设备标识 — 请换用发送设备标识的应用，或联系服务商",
  },
};

export function pageWords(lang: PageLanguage): PageWords {
  return WORDS[lang];
}

/** A day (UTC) in the page's language; English keeps the "15 Jan 2027" the apps' entries use. */
export function pageDay(d: Date, lang: PageLanguage, withYear = true): string {
  if (lang === "en") return withYear ? formatDay(d) : formatDayMonth(d);
  return new Intl.DateTimeFormat(lang, { timeZone: "UTC", day: "numeric", month: "long", ...(withYear ? { year: "numeric" } : {}) }).format(d);
}

/** Why this device may not fetch (core/devices.ts), in the page's language (the apps' entry stays in English). */
export function pageDeviceRefusal(r: { reason: "device-limit"; limit: number } | { reason: "no-device-id" }, lang: PageLanguage): string {
  return r.reason === "device-limit" ? WORDS[lang].deviceLimit(r.limit) : WORDS[lang].noDeviceId;
}

/** Why a subscriber may not connect, in the page's language (the apps' entry stays in English). */
export function pageBlockMessage(r: BlockReason, lang: PageLanguage): string {
  const w = WORDS[lang];
  if (r.kind === "expired") return w.expiredOn(pageDay(r.at, lang));
  return r.renewsAt ? w.limitRenews(pageDay(r.renewsAt, lang, false)) : w.limitContact;
}
