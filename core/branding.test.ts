import { describe, expect, it } from "vitest";
import { brandingSchema, LOGO_MAX_BYTES, readBranding, textOn } from "./branding";

const ok = { title: "", logo: "", supportUrl: "", accentColor: "", backgroundColor: "", showSubscriberName: false };
const issue = (patch: Record<string, unknown>) => {
  const r = brandingSchema.safeParse({ ...ok, ...patch });
  return r.success ? null : `${r.error.issues[0]!.path.join(".")}: ${r.error.issues[0]!.message}`;
};

describe("a cluster's brand", () => {
  it("turns empty fields into null and trims the rest", () => {
    expect(brandingSchema.parse(ok)).toEqual({ title: null, logo: null, supportUrl: null, accentColor: null, backgroundColor: null, showSubscriberName: false });
    expect(brandingSchema.parse({ ...ok, title: "  Fast VPN  ", accentColor: "#A0b1C2" })).toMatchObject({ title: "Fast VPN", accentColor: "#A0b1C2" });
  });

  it("takes colours only as #rrggbb: nothing that could leave a CSS value", () => {
    for (const c of ["red", "#fff", "#12345g", "#123456;}body{x:y", "rgb(1,2,3)", "#1234567", "var(--x)"]) expect(issue({ accentColor: c })).toBe("accentColor: Accent colour must be a colour like #1e40af");
    expect(issue({ backgroundColor: "url(https://x)" })).toBe("backgroundColor: Background colour must be a colour like #1e40af");
  });

  it("takes a logo as an https URL or a small raster image, never script or markup", () => {
    expect(issue({ logo: "https://cdn.example.com/logo.png" })).toBeNull();
    expect(issue({ logo: "data:image/png;base64,iVBORw0KGgo=" })).toBeNull();
    for (const logo of ["javascript:alert(1)", "http://cdn.example.com/l.png", "//cdn.example.com/l.png", "https://cdn.example.com/a b.png", 'https://x.example/"onerror="x'])
      expect(issue({ logo })).toBe("logo: Logo must be an https:// URL or an uploaded image");
    for (const logo of ["data:image/svg+xml;base64,PHN2Zz4=", "data:text/html;base64,PHNjcmlwdD4=", "data:image/png,<svg onload=x>"]) expect(issue({ logo })).toBe("logo: Logo must be a PNG, JPEG, GIF or WebP image");
    expect(issue({ logo: "https://user:pw@cdn.example.com/l.png" })).toBe("logo: Logo URL must not carry a user name or password");
    const big = `data:image/png;base64,${"A".repeat(Math.ceil((LOGO_MAX_BYTES * 4) / 3) + 8)}`;
    expect(issue({ logo: big })).toBe("logo: Logo image must be at most 48 KB");
  });

  it("takes a support link as https, tg or mailto only", () => {
    for (const s of ["https://t.me/help", "tg://resolve?domain=help", "mailto:help@example.com"]) expect(issue({ supportUrl: s })).toBeNull();
    for (const s of ["javascript:alert(1)", "http://example.com", "data:text/html,x", "tg:", "ftp://x"]) expect(issue({ supportUrl: s })).toMatch(/^supportUrl: Support link/);
  });

  it("refuses a title with control characters, only invisible characters, or too long", () => {
    expect(issue({ title: "a\u0007b" })).toBe("title: Title must not contain control characters");
    expect(issue({ title: "\u200b\u200b" })).toBe("title: Title must have a visible character");
    expect(issue({ title: "x".repeat(65) })).toBe("title: Title must be at most 64 characters");
    expect(issue({ title: "🇮🇷 سرعت" })).toBeNull();
  });

  it("reads a stored value leniently: absent or unreadable is no brand", () => {
    expect(readBranding(null)).toBeNull();
    expect(readBranding({ accentColor: "not a colour" })).toBeNull();
    expect(readBranding({ title: "X" })).toMatchObject({ title: "X", showSubscriberName: false });
  });

  it("picks readable text on a colour", () => {
    expect(textOn("#ffffff")).toBe("#0f172a");
    expect(textOn("#000000")).toBe("#ffffff");
  });
});
