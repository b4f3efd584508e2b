/**
 * The branded subscriber page (issue 25 point 7): an operator sets the cluster's title, logo,
 * support link and colours in the cluster's settings; the subscriber's page and apps show the
 * brand and never the internal cluster or subscriber names; the page's own words follow the
 * browser's language (Chromium's locale per context), right to left for Persian.
 */
import { asViewer, test, expect } from "./fixtures";
import { trpcMutation, trpcQuery, TrpcCallError } from "../scripts/harness/trpc";

/** A 1×1 red PNG: the "uploaded small image" the page shows from data. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");

async function aliceToken(page: import("@playwright/test").Page, clusterId: string): Promise<string> {
  const subs = await trpcQuery<Array<{ name: string; token: string }>>(page.request, "subscribers.list", { clusterId });
  return subs.find((s) => s.name === "alice")!.token;
}

test("an operator brands the subscriber page; the page and apps show the brand, no internal names", async ({ page, cluster }) => {
  const token = await aliceToken(page, cluster.id);
  await page.goto(`/clusters/${cluster.id}`);
  await page.getByRole("navigation", { name: "Cluster pages" }).getByRole("link", { name: "Subscriber page" }).click();
  const form = page.getByRole("form", { name: "Subscriber page brand" });
  await form.getByLabel("Title").fill("Aurora VPN");
  await form.getByLabel("Support link").fill("https://t.me/aurora_help");
  await form.getByLabel("Background colour").fill("#111827");
  // A colour that would end the CSS rule is refused, naming the field, and nothing is saved.
  await form.getByLabel("Accent colour").fill("red;}body{display:none");
  await expect(form.getByRole("alert")).toHaveText("Accent colour must be a colour like #1e40af");
  await expect(form.getByRole("button", { name: "Save brand" })).toBeDisabled();
  await form.getByLabel("Accent colour").fill("#b91c1c");
  await expect(form.getByRole("alert")).toHaveCount(0);
  await form.getByLabel("Logo URL").fill("javascript:alert(1)");
  await expect(form.getByRole("alert")).toHaveText("Logo must be an https:// URL or an uploaded image");
  await form.getByLabel("Logo URL").fill("");
  await form.locator('input[type="file"]').setInputFiles({ name: "logo.png", mimeType: "image/png", buffer: PNG });
  await expect(form.getByRole("img", { name: "Logo preview" })).toBeVisible();
  await form.getByRole("button", { name: "Save brand" }).click();
  await expect(form.getByRole("status")).toContainText("Saved");

  // The subscriber's page: brand title, logo, support link, colours; no internal names.
  await expect.poll(async () => (await page.request.get(`/sub/${token}?format=json`)).headers()["profile-title"]).toBe("Aurora VPN");
  const res = await page.goto(`/sub/${token}`);
  expect(res!.headers()["content-security-policy"]).toContain("img-src data:;");
  await expect(page.getByRole("heading", { level: 1, name: "Aurora VPN" })).toBeVisible();
  await expect(page).toHaveTitle(/^Aurora VPN/);
  await expect(page.getByTestId("logo")).toHaveAttribute("src", /^data:image\/png;base64,/);
  expect(await page.getByTestId("logo").evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(1);
  await expect(page.getByRole("link", { name: "Support" })).toHaveAttribute("href", "https://t.me/aurora_help");
  await expect(page.locator("body")).toHaveCSS("background-color", "rgb(17, 24, 39)");
  await expect(page.getByRole("link", { name: "Add to Hiddify" })).toHaveCSS("background-color", "rgb(185, 28, 28)");
  await expect(page.getByRole("link", { name: "Add to Hiddify" })).toHaveAttribute("href", /#Aurora%20VPN$/);
  await expect(page.getByText(cluster.name)).toHaveCount(0);
  await expect(page.getByText("alice")).toHaveCount(0);
  await page.screenshot({ path: "test-results/branded-subscriber-page.png", fullPage: true });

  // The operator may choose to show the subscriber's name.
  await page.goto(`/clusters/${cluster.id}/branding`);
  await form.getByLabel("Show the subscriber's name on the page").check();
  await form.getByRole("button", { name: "Save brand" }).click();
  await expect(form.getByRole("status")).toContainText("Saved");
  await expect.poll(async () => (await (await page.request.get(`/sub/${token}`, { headers: { "user-agent": "Mozilla/5.0 Chrome/140" } })).text()).includes("Subscription of alice")).toBe(true);

  // Audited.
  await page.goto(`/clusters/${cluster.id}/audit`);
  await expect(page.getByText(`Set the subscribers' page brand of ${cluster.name} (title "Aurora VPN")`).first()).toBeVisible();
});

test("the subscriber page speaks the browser's language: Persian right to left, Russian, Chinese, else English", async ({ page, cluster, browser }, testInfo) => {
  const token = await aliceToken(page, cluster.id);
  await trpcMutation(page.request, "clusters.setBranding", {
    clusterId: cluster.id,
    branding: { title: "Aurora VPN", logo: "", supportUrl: "mailto:help@example.com", accentColor: "", backgroundColor: "", showSubscriberName: false },
  });
  const cases = [
    { locale: "fa-IR", lang: "fa", dir: "rtl", heading: "افزودن به برنامه", support: "پشتیبانی" },
    { locale: "ru-RU", lang: "ru", dir: "ltr", heading: "Добавить в приложение", support: "Поддержка" },
    { locale: "zh-CN", lang: "zh", dir: "ltr", heading: "添加到应用", support: "联系客服" },
    { locale: "de-DE", lang: "en", dir: "ltr", heading: "Add to your app", support: "Support" },
  ];
  for (const c of cases) {
    const ctx = await browser.newContext({ baseURL: testInfo.project.use.baseURL, locale: c.locale });
    try {
      const p = await ctx.newPage();
      await p.goto(`/sub/${token}`);
      await expect(p.locator("html")).toHaveAttribute("lang", c.lang);
      await expect(p.locator("html")).toHaveAttribute("dir", c.dir);
      await expect(p.getByRole("heading", { level: 2, name: c.heading })).toBeVisible();
      // Operator text is shown as written, in every language.
      await expect(p.getByRole("heading", { level: 1, name: "Aurora VPN" })).toBeVisible();
      await expect(p.getByRole("link", { name: c.support })).toHaveAttribute("href", "mailto:help@example.com");
      if (c.dir === "rtl") {
        // Right to left: the (short) title sits in the right half of the page's column.
        const box = (await p.getByRole("heading", { level: 1 }).boundingBox())!;
        const main = (await p.locator("main").boundingBox())!;
        expect(box.x).toBeGreaterThan(main.x + main.width / 2);
        await p.screenshot({ path: "test-results/subscriber-page-fa.png", fullPage: true });
      }
    } finally {
      await ctx.close();
    }
  }
});

test("a viewer sees the brand settings but cannot change them", async ({ page, cluster, browser }) => {
  await trpcMutation(page.request, "clusters.setBranding", {
    clusterId: cluster.id,
    branding: { title: "Aurora VPN", logo: "", supportUrl: "", accentColor: "", backgroundColor: "", showSubscriberName: false },
  });
  await asViewer(page, browser, async (p) => {
    await p.goto(`/clusters/${cluster.id}/branding`);
    const form = p.getByRole("form", { name: "Subscriber page brand" });
    await expect(form.getByLabel("Title")).toHaveValue("Aurora VPN");
    await expect(form.getByRole("button", { name: "Save brand" })).toHaveCount(0);
    const err = await trpcMutation(p.request, "clusters.setBranding", {
      clusterId: cluster.id,
      branding: { title: "Viewer was here", logo: "", supportUrl: "", accentColor: "", backgroundColor: "", showSubscriberName: false },
    }).catch((e: TrpcCallError) => e);
    expect((err as TrpcCallError).status).toBe(403);
    const brand = await trpcQuery<{ branding: { title: string } }>(page.request, "clusters.get", { clusterId: cluster.id });
    expect(brand.branding.title).toBe("Aurora VPN");
  });
});
