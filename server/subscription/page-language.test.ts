import { describe, expect, it } from "vitest";
import { PAGE_LANGUAGES, pageBlockMessage, pageDeviceRefusal, pageWords, pickPageLanguage } from "./page-language";

describe("the subscriber page's language from Accept-Language", () => {
  it("is English without a header, or for languages it does not speak", () => {
    for (const h of [undefined, null, "", "de-DE,de;q=0.9", "*", "x-klingon", ";;,,", "q=1"]) expect(pickPageLanguage(h)).toBe("en");
  });

  it("matches region and script tags by their language", () => {
    expect(pickPageLanguage("zh-CN")).toBe("zh");
    expect(pickPageLanguage("zh-Hant-TW")).toBe("zh");
    expect(pickPageLanguage("fa-IR")).toBe("fa");
    expect(pickPageLanguage("RU")).toBe("ru");
  });

  it("takes the highest q, the first listed on a tie, and never one refused with q=0", () => {
    expect(pickPageLanguage("en;q=0.5, ru;q=0.8, fa;q=0.7")).toBe("ru");
    expect(pickPageLanguage("de, fa, ru")).toBe("fa");
    expect(pickPageLanguage("ru;q=0, zh;q=0.1")).toBe("zh");
    expect(pickPageLanguage("ru;q=0")).toBe("en");
    // A German speaker who also reads Russian gets Russian, not the default.
    expect(pickPageLanguage("de-DE,de;q=0.9,ru;q=0.8")).toBe("ru");
    // English listed first with the same weight wins over a later language.
    expect(pickPageLanguage("en-US,ru")).toBe("en");
  });

  it("ignores malformed weights and stays bounded on a hostile header", () => {
    expect(pickPageLanguage("ru;q=2, fa;q=abc, zh;q=0.3")).toBe("zh");
    expect(pickPageLanguage(`${"xx,".repeat(10_000)}ru`)).toBe("en");
  });

  it("has every word in every language", () => {
    const keys = Object.keys(pageWords("en")).sort();
    for (const l of PAGE_LANGUAGES) expect(Object.keys(pageWords(l)).sort()).toEqual(keys);
  });

  it("says why a subscriber is blocked in the page's language", () => {
    const at = new Date("2026-12-01T00:00:00Z");
    expect(pageBlockMessage({ kind: "expired", at }, "en")).toBe("⛔ Subscription expired on 1 Dec 2026 — contact your provider to renew");
    expect(pageBlockMessage({ kind: "limited", usedBytes: 2, limitBytes: 1, renewsAt: at }, "ru")).toBe("⛔ Лимит трафика исчерпан — обновится 1 декабря");
  });

  it("says why a device is refused in the page's language", () => {
    expect(pageDeviceRefusal({ reason: "device-limit", limit: 3 }, "en")).toBe("⛔ Device limit reached (3) — remove a device or contact your provider");
    expect(pageDeviceRefusal({ reason: "device-limit", limit: 3 }, "ru")).toBe("⛔ Достигнут лимит устройств (3) — удалите устройство или обратитесь к провайдеру");
    for (const l of PAGE_LANGUAGES) expect(pageDeviceRefusal({ reason: "no-device-id" }, l)).toMatch(/^⛔ /);
  });
});
