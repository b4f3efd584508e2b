/**
 * A cluster's brand on its subscribers' public page (issue 25 point 7): title, logo, support
 * link and colours. Every field is operator text that lands in a page anyone with a
 * subscription URL opens, and in the `profile-title` header apps show, so each is held to a
 * shape that cannot become markup, CSS or script there:
 * - colours are `#rrggbb` only (anything else could close the style rule and add its own);
 * - the logo is an https URL, or a small uploaded raster image as a data: URL (never
 *   data:text/html, never SVG, never javascript:);
 * - the support link is https:, tg: or mailto: only.
 * Browser-safe: the settings form validates with the same schema as the server.
 */
import { z } from "zod";
import { hasVisibleChar } from "./validation";

export const BRAND_TITLE_MAX = 64;
export const BRAND_URL_MAX = 2048;
/** An uploaded logo's bytes: small, since it is stored in the cluster row and sent with every page. */
export const LOGO_MAX_BYTES = 48 * 1024;
export const LOGO_IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;

const HEX_COLOR = /^#[0-9a-f]{6}$/i;
const FORBIDDEN_CHARS = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u;
const DATA_LOGO = /^data:(image\/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/]+={0,2})$/;

/** Bytes a base64 payload decodes to. */
export function base64Bytes(b64: string): number {
  const pad = b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0;
  return Math.floor((b64.length * 3) / 4) - pad;
}

/** Why `s` is not an acceptable logo (https URL or a small data: image), or null. */
export function logoIssue(s: string): string | null {
  if (s.startsWith("data:")) {
    const m = DATA_LOGO.exec(s);
    if (!m) return "Logo must be a PNG, JPEG, GIF or WebP image";
    if (base64Bytes(m[2]!) > LOGO_MAX_BYTES) return `Logo image must be at most ${LOGO_MAX_BYTES / 1024} KB`;
    return null;
  }
  if (s.length > BRAND_URL_MAX) return `Logo URL must be at most ${BRAND_URL_MAX} characters`;
  const u = safeUrl(s);
  if (!u || u.protocol !== "https:") return "Logo must be an https:// URL or an uploaded image";
  if (u.username || u.password) return "Logo URL must not carry a user name or password";
  return null;
}

/** Why `s` is not an acceptable support link (https:, tg: or mailto:), or null. */
export function supportLinkIssue(s: string): string | null {
  if (s.length > BRAND_URL_MAX) return `Support link must be at most ${BRAND_URL_MAX} characters`;
  const u = safeUrl(s);
  if (!u || !["https:", "tg:", "mailto:"].includes(u.protocol)) return "Support link must start with https://, tg:// or mailto:";
  if (u.protocol === "https:" && (u.username || u.password)) return "Support link must not carry a user name or password";
  if (u.protocol !== "https:" && s.length <= u.protocol.length) return "Support link needs more than its scheme";
  return null;
}

function safeUrl(s: string): URL | null {
  // Whitespace and quotes have no place in a URL the page writes into an attribute.
  if (/[\s"'<>\\`]/.test(s) || FORBIDDEN_CHARS.test(s)) return null;
  try {
    return new URL(s);
  } catch {
    return null;
  }
}

/** A trimmed text field checked by `issue`; empty (or null) means "not set". */
const optional = (issue: (s: string) => string | null, maxChars: number, tooLong: string) =>
  z
    .string()
    .max(maxChars, tooLong)
    .nullish()
    .transform((raw, ctx) => {
      const s = (raw ?? "").trim();
      if (s === "") return null;
      const why = issue(s);
      if (why) {
        ctx.addIssue({ code: "custom", message: why });
        return z.NEVER;
      }
      return s;
    });

function titleIssue(s: string): string | null {
  if ([...s].length > BRAND_TITLE_MAX) return `Title must be at most ${BRAND_TITLE_MAX} characters`;
  if (FORBIDDEN_CHARS.test(s)) return "Title must not contain control characters";
  if (!hasVisibleChar(s)) return "Title must have a visible character";
  return null;
}

const colorIssue = (label: string) => (s: string) => (HEX_COLOR.test(s) ? null : `${label} must be a colour like #1e40af`);

export const brandingSchema = z
  .object({
    /** The page's title and the profile name apps show; null = a neutral "VPN". */
    title: optional(titleIssue, BRAND_TITLE_MAX * 8, `Title must be at most ${BRAND_TITLE_MAX} characters`),
    logo: optional(logoIssue, Math.ceil((LOGO_MAX_BYTES * 4) / 3) + 64, `Logo image must be at most ${LOGO_MAX_BYTES / 1024} KB`),
    supportUrl: optional(supportLinkIssue, BRAND_URL_MAX + 64, `Support link must be at most ${BRAND_URL_MAX} characters`),
    accentColor: optional(colorIssue("Accent colour"), 64, "Accent colour must be a colour like #1e40af"),
    backgroundColor: optional(colorIssue("Background colour"), 64, "Background colour must be a colour like #1e40af"),
    /** The subscriber's own name (an internal record) is shown only when the operator says so. */
    showSubscriberName: z.boolean().default(false),
  })
  .strict();

export type Branding = z.output<typeof brandingSchema>;
export type BrandingInput = z.input<typeof brandingSchema>;

/** The title apps and the page show when the operator set none: no internal name leaks. */
export const DEFAULT_BRAND_TITLE = "VPN";

/** A stored value as a Branding, or null when absent or (from an older shape) invalid. */
export function readBranding(value: unknown): Branding | null {
  if (value === null || value === undefined) return null;
  const r = brandingSchema.safeParse(value);
  return r.success ? r.data : null;
}

/** Relative luminance (WCAG) of a #rrggbb colour. */
export function luminance(hex: string): number {
  const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * c[0]! + 0.7152 * c[1]! + 0.0722 * c[2]!;
}

/** Text colour readable on `hex`: near-black on light colours, white on dark ones. */
export function textOn(hex: string): string {
  return luminance(hex) > 0.4 ? "#0f172a" : "#ffffff";
}
