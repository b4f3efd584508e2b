import { describe, expect, it } from "vitest";
import { parseEnv } from "@/server/env";
import { startBanner } from "@/server/start-banner";

const loggedIn = { needsSetup: false, setupCode: null };

describe("start banner", () => {
  it("names PUBLIC_URL, validated by the env schema, and the local port beside it", () => {
    const e = parseEnv({ PUBLIC_URL: "https://vpn.example.com/", PORT: "3000" });
    expect(startBanner(e, loggedIn, 3000, "/d/setup-code")).toBe(
      "\nRouteboard is running on https://vpn.example.com (listening on port 3000) — log in with your operator account.\n\n",
    );
  });

  it("keeps a PUBLIC_URL path (a panel under a sub-path of the proxy)", () => {
    const e = parseEnv({ PUBLIC_URL: "https://example.com/panel", PORT: "8080", ADMIN_USERNAME: "admin", ADMIN_PASSWORD: "correct-horse" });
    expect(startBanner(e, loggedIn, 8080, "/d/setup-code")).toContain("running on https://example.com/panel (listening on port 8080) — log in as admin (ADMIN_PASSWORD).");
  });

  it("falls back to localhost and the port actually bound when PUBLIC_URL is unset", () => {
    const e = parseEnv({ PORT: "0" });
    const banner = startBanner(e, { needsSetup: true, setupCode: "ABCD-EFGH" }, 41234, "/d/setup-code");
    expect(banner).toContain("Routeboard is running on http://localhost:41234 — open it and create the owner account");
    expect(banner).toContain("    ABCD-EFGH\n");
  });
});
