/** Issue 11 in the browser: security headers with a working dashboard, and cross-site writes refused. */
import { test, expect } from "./fixtures";
import { trpcQuery } from "../scripts/harness/trpc";

test("pages carry a nonce CSP and the diagram renders with no CSP violation (finding 10)", async ({ page, cluster }) => {
  const violations: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to (load|execute|apply)/i.test(m.text())) violations.push(m.text());
  });
  page.on("pageerror", (e) => violations.push(String(e)));
  const first = await page.goto(`/clusters/${cluster.id}`);
  const headers = first!.headers();
  const csp = headers["content-security-policy"]!;
  expect(csp).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
  expect(csp).toContain("frame-ancestors 'none'");
  expect(headers["x-frame-options"]).toBe("DENY");
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["referrer-policy"]).toBe("strict-origin-when-cross-origin");
  await expect(page.getByRole("region", { name: "Route 🇺🇸 USA" })).toBeVisible();
  await expect(page.getByRole("button", { name: "🇺🇸 Dallas" }).first()).toBeVisible();
  // A fresh nonce per response.
  const second = await page.request.get(`/clusters/${cluster.id}`);
  expect(second.headers()["content-security-policy"]).not.toBe(csp);
  // Clicking around the client-side router still runs within the policy.
  await page.getByRole("link", { name: "Team" }).click();
  await expect(page.getByRole("heading", { name: "Team" })).toBeVisible();
  expect(violations).toEqual([]);
});

test("prefetches of pages carry the page CSP too (issue 21, point 12)", async ({ request, cluster }) => {
  const prefetches: Array<Record<string, string>> = [{ "next-router-prefetch": "1", rsc: "1" }, { purpose: "prefetch" }, { rsc: "1" }];
  for (const headers of prefetches) {
    const res = await request.get(`/clusters/${cluster.id}`, { headers });
    expect(res.headers()["content-security-policy"], JSON.stringify(headers)).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
    expect(res.headers()["x-frame-options"]).toBe("DENY");
  }
});

test("machine endpoints carry headers that load nothing; static files are not sniffed or framed", async ({ request }) => {
  const res = await request.get("/api/health");
  expect(res.headers()["content-security-policy"]).toMatch(/^default-src 'none'/);
  expect(res.headers()["x-content-type-options"]).toBe("nosniff");
  const icon = await request.get("/favicon.svg");
  expect(icon.headers()["x-content-type-options"]).toBe("nosniff");
  expect(icon.headers()["x-frame-options"]).toBe("DENY");
});

test("a form on another site cannot log the operator out (finding 8)", async ({ page, baseURL }) => {
  await page.route("http://attacker.test/**", (route) =>
    route.fulfill({
      contentType: "text/html",
      body: `<form method="post" action="${baseURL}/api/trpc/auth.logout" enctype="multipart/form-data"><input name="x" value="1"><button>Win a prize</button></form>`,
    }),
  );
  await page.goto("http://attacker.test/");
  const answer = page.waitForResponse((r) => r.url().startsWith(`${baseURL}/api/trpc/auth.logout`));
  await page.getByRole("button", { name: "Win a prize" }).click();
  expect((await answer).status()).toBe(403);
  await expect(page.locator("body")).toContainText("Cross-site request refused");
  // Still logged in.
  expect(await trpcQuery(page.request, "auth.me")).toMatchObject({ username: "admin" });
});

test("every dashboard page works within the CSP (finding 10)", async ({ page, cluster }) => {
  const violations: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to (load|execute|apply|connect)/i.test(m.text())) violations.push(m.text());
  });
  const pages: Array<[string, RegExp]> = [
    ["/clusters", /^Clusters$/],
    [`/clusters/${cluster.id}/servers`, /^Servers & inbounds$/],
    [`/clusters/${cluster.id}/subscribers`, /^Subscribers$/],
    [`/clusters/${cluster.id}/audit`, /^Audit log$/],
    ["/team", /^Team$/],
    ["/tokens", /^API tokens$/],
  ];
  for (const [path, heading] of pages) {
    await page.goto(path);
    await expect(page.getByRole("heading", { name: heading })).toBeVisible();
  }
  await page.goto(`/clusters/${cluster.id}/health`);
  await expect(page.locator("h1").first()).toBeVisible();
  // The QR code is a data: image; the live updates are server-sent events.
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await page.getByRole("button", { name: /^Show link of / }).first().click();
  await expect(page.getByRole("dialog").locator("img")).toBeVisible();
  expect(violations).toEqual([]);
});
