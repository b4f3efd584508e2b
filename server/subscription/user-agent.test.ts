import { describe, expect, it } from "vitest";
import { DEFAULT_FORMAT, formatForUserAgent, USER_AGENT_TABLE } from "./user-agent";

/** Real-looking User-Agents, as the apps send them; every row of the table has some. */
const CASES: Array<[string, string]> = [
  // Hiddify first: its User-Agent also names ClashMeta and sing-box.
  ["HiddifyNext/2.5.7 (android) like ClashMeta v2ray sing-box", "singbox"],
  ["HiddifyNext/1.5.2 (windows) like ClashMeta v2ray sing-box", "singbox"],
  // NekoBox asks for ClashMeta in words but takes share links.
  ["NekoBox/Android/1.3.4 (Prefer ClashMeta Format)", "base64"],
  ["nekoray/3.26", "base64"],
  ["sing-box 1.11.4", "singbox"],
  ["SFA/1.11.4 (1114; sing-box 1.11.4)", "singbox"],
  ["SFI/1.11.4 (Build 330; sing-box 1.11.4; language en_US)", "singbox"],
  ["SFM/1.10.7 (Build 297; sing-box 1.10.7; language en_US)", "singbox"],
  ["clash-verge/v2.0.3", "clash"],
  ["ClashMetaForAndroid/2.11.5.Meta", "clash"],
  ["clash.meta", "clash"],
  ["ClashX/1.118.0 (com.west2online.ClashX; build:1.118.0; macOS 14.4.1) Alamofire/5.8.0", "clash"],
  ["ClashX Meta/v1.4.24 (com.metacubex.ClashX.meta; build:622; macOS 26.0.0) Alamofire/5.10.2", "clash"],
  ["Stash/3.1.1 Clash/1.9.0", "clash"],
  ["mihomo/1.19.2", "clash"],
  ["FlClash/v0.8.80 clash-verge Platform/android", "clash"],
  ["v2rayN/7.10.5", "base64"],
  ["v2rayNG/1.9.36", "base64"],
  ["Streisand/1.6.40 CFNetwork/1568.100.1 Darwin/24.0.0", "base64"],
  ["Shadowrocket/2070 CFNetwork/1410.0.3 Darwin/22.6.0", "base64"],
  ["Happ/1.6.2/ios CFNetwork/1568.100.1 Darwin/24.0.0", "base64"],
  ["Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "html"],
  ["Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", "html"],
  ["Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "html"],
  ["curl/8.11.1", "base64"],
  ["", "base64"],
];

describe("User-Agent → format", () => {
  it.each(CASES)("%s → %s", (ua, format) => {
    expect(formatForUserAgent(ua)).toBe(format);
  });

  it("every row of the table is reached by some case (first match wins)", () => {
    const reached = new Set<number>();
    for (const [ua] of CASES) {
      const i = USER_AGENT_TABLE.findIndex((r) => r.pattern.test(ua));
      if (i >= 0) reached.add(i);
    }
    expect([...reached].sort((a, b) => a - b)).toEqual(USER_AGENT_TABLE.map((_, i) => i));
  });

  it("no User-Agent and an app with a Mozilla/ prefix and an app token", () => {
    expect(formatForUserAgent(undefined)).toBe(DEFAULT_FORMAT);
    expect(formatForUserAgent(null)).toBe("base64");
    // An app that embeds a browser engine still names itself: the app's row wins.
    expect(formatForUserAgent("Mozilla/5.0 (Linux; Android 14) clash-verge/v2.0.3")).toBe("clash");
    expect(formatForUserAgent("Mozilla/5.0 (iPhone) Shadowrocket/2070")).toBe("base64");
  });
});
