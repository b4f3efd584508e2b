/**
 * How a subscription is added to each VPN app: the subscription URL and one "add to app"
 * deep link per app. Browser-safe (no Node APIs): the subscriber's page (server) and the
 * operator's link dialog (browser) both build their links here, so they never disagree.
 */

/** `<origin>/sub/<token>`; the origin is PUBLIC_URL when set (a trailing slash is dropped). */
export function subscriptionUrl(origin: string, token: string): string {
  return `${origin.replace(/\/+$/, "")}/sub/${encodeURIComponent(token)}`;
}

export interface AppLink {
  /** Stable id (tests, test ids). */
  id: string;
  /** What the user picks: the app or family of apps. */
  app: string;
  /** Platforms, for the label. */
  platforms: string;
  href: string;
}

/** The subscription URL with an explicit format, for apps whose import ignores User-Agent detection. */
function withFormat(url: string, format: "clash" | "singbox"): string {
  return `${url}${url.includes("?") ? "&" : "?"}format=${format}`;
}

/** ASCII-only base64 (URLs are ASCII once serialised; btoa exists in browsers and Node 16+). */
function base64(s: string): string {
  return btoa(s.replace(/[^ -~]/gu, (c) => encodeURIComponent(c)));
}

/**
 * One deep link per app family, in the order shown. `name` is the profile name the app
 * shows (the cluster's brand title, as `profile-title` says).
 */
export function appLinks(url: string, name: string): AppLink[] {
  const u = encodeURIComponent;
  return [
    { id: "clash", app: "Clash Verge / Clash Meta / ClashX", platforms: "Windows, macOS, Linux, Android", href: `clash://install-config?url=${u(withFormat(url, "clash"))}&name=${u(name)}` },
    { id: "stash", app: "Stash", platforms: "iOS, macOS", href: `stash://install-config?url=${u(withFormat(url, "clash"))}&name=${u(name)}` },
    { id: "singbox", app: "sing-box (SFA, SFI, SFM)", platforms: "Android, iOS, macOS", href: `sing-box://import-remote-profile?url=${u(withFormat(url, "singbox"))}#${u(name)}` },
    { id: "hiddify", app: "Hiddify", platforms: "Android, iOS, Windows, macOS, Linux", href: `hiddify://import/${url}#${u(name)}` },
    { id: "v2rayng", app: "v2rayNG", platforms: "Android", href: `v2rayng://install-sub?url=${u(url)}&name=${u(name)}` },
    { id: "streisand", app: "Streisand", platforms: "iOS, macOS", href: `streisand://import/${url}#${u(name)}` },
    { id: "happ", app: "Happ", platforms: "Android, iOS, Windows, macOS", href: `happ://add/${url}` },
    { id: "shadowrocket", app: "Shadowrocket", platforms: "iOS, macOS", href: `shadowrocket://add/sub://${base64(url)}?remark=${u(name)}` },
  ];
}
