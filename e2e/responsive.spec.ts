/**
 * A phone (390×844) can use every page: nothing is wider than the screen, the header's
 * links fold into a Menu button, the cluster tabs scroll, tables are cards, dialogs fit,
 * and the diagram is a list whose "Move to…" menus move inbounds. Dark mode follows the
 * system setting, with readable text.
 */
import type { BrowserContext, Page } from "@playwright/test";
import { test, expect, routeOf } from "./fixtures";
import { trpcMutation } from "../scripts/harness/trpc";

const WIDTH = 390;
test.use({ viewport: { width: WIDTH, height: 844 } });

type Counted = typeof window & { dataRequestsOpen: number };

/** Counts a context's requests until their bodies are read; the live change stream, which stays open by design, is left out. */
async function countRequests(context: BrowserContext) {
  await context.addInitScript(() => {
    const w = window as Counted;
    const send = window.fetch.bind(window);
    w.dataRequestsOpen = 0;
    window.fetch = async (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (url.includes("onChange")) return send(input, init);
      w.dataRequestsOpen++;
      try {
        const res = await send(input, init);
        void res
          .clone()
          .arrayBuffer()
          .catch(() => undefined)
          .finally(() => w.dataRequestsOpen--);
        return res;
      } catch (err) {
        w.dataRequestsOpen--;
        throw err;
      }
    };
  });
}

test.beforeEach(async ({ page }) => {
  await countRequests(page.context());
});

async function expectNoHorizontalScroll(page: Page) {
  // A late-loading part (a table, a chart) could widen the page after first paint: checked
  // again once every request has been answered and what it brought has been drawn.
  await expect.poll(() => page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(WIDTH);
  expect(await page.evaluate(() => typeof (window as Counted).dataRequestsOpen), "countRequests(context) before the page opens").toBe("number");
  await page.waitForFunction(() => document.readyState === "complete" && (window as Counted).dataRequestsOpen === 0);
  await page.evaluate(() => new Promise((drawn) => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(drawn)))));
  expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(WIDTH);
}

/** The element lies fully inside the viewport's width (so nothing of it is cut off). */
async function expectWithinWidth(page: Page, locator: ReturnType<Page["locator"]>) {
  await locator.scrollIntoViewIfNeeded();
  const box = await locator.boundingBox();
  expect(box, "element has a box").not.toBeNull();
  expect(box!.x).toBeGreaterThanOrEqual(0);
  expect(box!.x + box!.width).toBeLessThanOrEqual(WIDTH + 0.5);
}

test("the header folds into a Menu button: it opens, Escape closes it, and a link in it navigates", async ({ page }) => {
  await page.goto("/clusters");
  await expectNoHorizontalScroll(page);
  const menu = page.getByRole("button", { name: "Menu", exact: true });
  await expect(menu).toBeVisible();
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  // The wide header's links are folded away.
  await expect(page.getByRole("link", { name: "Team" })).toBeHidden();

  await menu.click();
  await expect(menu).toHaveAttribute("aria-expanded", "true");
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav.getByRole("link", { name: "Clusters" })).toBeFocused();
  await expect(page.getByRole("button", { name: "Log out" })).toBeVisible();
  await page.keyboard.press("Escape");
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  await expect(menu).toBeFocused();
  await expect(page.getByRole("link", { name: "Team" })).toBeHidden();

  // Tabbing past its last item closes it too.
  await menu.click();
  await page.getByRole("button", { name: "Log out" }).focus();
  await page.keyboard.press("Tab");
  await expect(menu).toHaveAttribute("aria-expanded", "false");

  await menu.click();
  await page.getByRole("link", { name: "Team" }).click();
  await expect(page).toHaveURL(/\/team$/);
  await expect(page.getByRole("heading", { name: "Team" })).toBeVisible();
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  await expectNoHorizontalScroll(page);
  // The team table is cards: a row's actions are on screen.
  await expectWithinWidth(page, page.getByRole("button", { name: /^Reset password of / }).first());

  await menu.click();
  await page.getByRole("button", { name: "Change password" }).click();
  const dialog = page.getByRole("dialog", { name: "Change your password" });
  await expect(dialog).toBeVisible();
  await expectWithinWidth(page, dialog);
  await expectNoHorizontalScroll(page);
});

test("the diagram is a list on a phone, and an inbound moves through its Move to… menu", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}`);
  const list = page.getByTestId("diagram-list");
  await expect(list).toBeVisible();
  await expect(page.getByTestId("diagram")).toHaveCount(0);
  await expect(page.getByRole("button", { name: "List" })).toHaveAttribute("aria-pressed", "true");
  await expectNoHorizontalScroll(page);

  // Every route with its inbounds (server, status, protocol and port), then Unassigned.
  const usa = list.getByRole("region", { name: "Route 🇺🇸 USA", exact: true });
  const dallas = usa.getByRole("listitem").filter({ hasText: "🇺🇸 Dallas" }).first();
  await expect(dallas).toContainText(/VLESS·tcp(·\w+)? :\d+/);
  await expect(list.getByRole("region", { name: "Route 🇯🇵 Japan", exact: true })).toContainText("No inbounds");
  await expect(list.getByRole("region", { name: "Unassigned inbounds" }).getByRole("listitem")).toHaveCount(2);

  const menuButton = page.getByRole("button", { name: "Move 🇩🇪 Frankfurt test to…" });
  await expectWithinWidth(page, menuButton);
  await menuButton.click();
  const menu = page.getByRole("menu");
  await expectWithinWidth(page, menu);
  await menu.getByRole("menuitem", { name: "🇳🇱 Netherlands" }).click();
  await expect(list.getByRole("region", { name: "Route 🇳🇱 Netherlands", exact: true }).getByText("🇩🇪 Frankfurt test", { exact: true })).toBeVisible();
  await expect.poll(() => routeOf(page, cluster, "🇩🇪 Frankfurt test")).toBe("🇳🇱 Netherlands");

  // The toggle brings the diagram back on request.
  await page.getByRole("button", { name: "Diagram" }).click();
  await expect(page.getByTestId("diagram")).toBeVisible();
  await expect(list).toHaveCount(0);
  await expectNoHorizontalScroll(page);
});

test("the cluster tabs scroll sideways and each page fits: servers, subscribers, health, audit, explain", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/servers`);
  await expect(page.getByRole("heading", { name: "Servers & inbounds" })).toBeVisible();
  await expectNoHorizontalScroll(page);
  // Inbound tables are cards: the edit button of an inbound is on screen.
  await expectWithinWidth(page, page.getByRole("button", { name: /^Edit inbound / }).first());
  await page.getByRole("button", { name: /^Edit inbound / }).first().click();
  const inboundDialog = page.getByRole("dialog");
  await expectWithinWidth(page, inboundDialog);
  await expectNoHorizontalScroll(page);
  await inboundDialog.getByRole("button", { name: "Close" }).click();

  const tabs = page.getByRole("navigation", { name: "Cluster pages" });
  // The current tab is scrolled into sight within the tab strip, not cut off at its edge.
  const expectTabInSight = (link: ReturnType<Page["locator"]>) =>
    expect
      .poll(async () => {
        const [b, strip] = [await link.boundingBox(), await tabs.boundingBox()];
        return b !== null && strip !== null && b.x >= strip.x - 0.5 && b.x + b.width <= Math.min(WIDTH, strip.x + strip.width) + 0.5;
      })
      .toBe(true);
  for (const [tab, heading] of [
    ["Subscribers", "Subscribers"],
    ["Health", "Server health"],
    ["Audit log", "Audit log"],
  ] as const) {
    const link = tabs.getByRole("link", { name: tab });
    await link.click();
    await expect(page.getByRole("heading", { name: heading, exact: true })).toBeVisible();
    await expect(link).toHaveAttribute("aria-current", "page");
    await expectTabInSight(link);
    await expectNoHorizontalScroll(page);

    if (tab === "Subscribers") {
      // A subscriber's actions are on screen, and its dialog fits.
      const edit = page.getByRole("button", { name: /^Edit subscriber / }).first();
      await expectWithinWidth(page, edit);
      await edit.click();
      const dialog = page.getByRole("dialog");
      await expect(dialog).toBeVisible();
      await expectWithinWidth(page, dialog);
      await expectNoHorizontalScroll(page);
      await page.keyboard.press("Escape");
      await expect(dialog).toHaveCount(0);
    }
    if (tab === "Health") {
      await expectWithinWidth(page, page.getByTestId("fail-streak").first());
      await expectWithinWidth(page, page.getByTestId("health-status").first());
    }
  }

  // Loaded directly, the last tab is scrolled into sight too.
  await page.goto(`/clusters/${cluster.id}/audit`);
  await expectTabInSight(tabs.getByRole("link", { name: "Audit log" }));

  // One subscriber's page: its tabs scroll sideways; the explanation is one of them.
  await tabs.getByRole("link", { name: "Subscribers" }).click();
  const first = page.getByTestId("subscriber-row").first().getByRole("link");
  await first.click();
  await expect(page.getByRole("region", { name: "Usage history" })).toBeVisible();
  await expectNoHorizontalScroll(page);
  await page.getByRole("tab", { name: "Explanation" }).click();
  await expect(page.getByRole("heading", { name: /app gets right now/ })).toBeVisible();
  await expect(page.getByTestId("chosen-inbound").first()).toBeVisible();
  await expectNoHorizontalScroll(page);
});

test("alerts and API tokens fit the phone, with a target and a token listed as cards", async ({ page }) => {
  const tag = Math.random().toString(36).slice(2, 8);
  // A long URL must wrap, not widen the page. Nothing listens on port 9 of loopback.
  await trpcMutation(page.request, "alerts.create", {
    name: `phone-${tag}`,
    kind: "webhook",
    url: `http://127.0.0.1:9/a/very/long/path/that/has/no/spaces/in/it/at/all/${"x".repeat(80)}`,
    secret: "a-secret-of-sixteen-plus",
    events: ["server.down"],
  });
  await page.goto("/alerts");
  await expect(page.getByRole("heading", { name: "Alerts", exact: true })).toBeVisible();
  await expect(page.getByRole("listitem", { name: `Alert target phone-${tag}` })).toBeVisible();
  await expectNoHorizontalScroll(page);

  await page.goto("/tokens");
  await expect(page.getByRole("heading", { name: "API tokens" })).toBeVisible();
  await expectNoHorizontalScroll(page);
  const name = `phone-bot-${tag}`;
  await page.getByLabel("Name").fill(name);
  const create = page.getByRole("button", { name: "Create token" });
  await expectWithinWidth(page, create);
  await create.click();
  const dialog = page.getByRole("dialog", { name: `API token ${name}` });
  await expect(dialog).toBeVisible();
  await expectWithinWidth(page, dialog);
  await expectNoHorizontalScroll(page);
  await dialog.getByRole("button", { name: "Done" }).click();
  await expectWithinWidth(page, page.getByRole("button", { name: `Revoke ${name}` }));
  await expectNoHorizontalScroll(page);
});

test("the login page fits the phone", async ({ browser }) => {
  const context = await browser.newContext({ viewport: { width: WIDTH, height: 844 } });
  try {
    await countRequests(context);
    const p = await context.newPage();
    await p.goto("/login");
    await expect(p.getByRole("button", { name: "Log in" })).toBeVisible();
    await expectNoHorizontalScroll(p);
    await expectWithinWidth(p, p.getByRole("button", { name: "Log in" }));
  } finally {
    await context.close();
  }
});

/** Colours of the body and of one element, as sRGB, and the contrast ratio of text on background. */
async function colours(page: Page, selector: string) {
  await expect(page.locator(selector).first()).toBeVisible();
  return page.evaluate((sel) => {
    // Computed colours may be oklch(): a canvas turns any CSS colour into sRGB bytes.
    const ctx = document.createElement("canvas").getContext("2d")!;
    const rgb = (css: string) => {
      ctx.clearRect(0, 0, 1, 1);
      ctx.fillStyle = "#000";
      ctx.fillStyle = css;
      ctx.fillRect(0, 0, 1, 1);
      const [r, g, b] = ctx.getImageData(0, 0, 1, 1).data;
      return [r!, g!, b!];
    };
    const lum = (c: number[]) => {
      const [r, g, b] = c.map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const ratio = (a: number, b: number) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const body = getComputedStyle(document.body);
    const bodyBg = lum(rgb(body.backgroundColor));
    const bodyText = lum(rgb(body.color));
    const el = document.querySelector(sel)!;
    // The element's own background, or the nearest ancestor's that has one.
    let bgEl: Element | null = el;
    while (bgEl && getComputedStyle(bgEl).backgroundColor === "rgba(0, 0, 0, 0)") bgEl = bgEl.parentElement;
    const elBg = lum(rgb(getComputedStyle(bgEl ?? document.body).backgroundColor));
    const elText = lum(rgb(getComputedStyle(el).color));
    return { bodyBg, bodyText, bodyRatio: ratio(bodyBg, bodyText), elBg, elRatio: ratio(elBg, elText) };
  }, selector);
}

test("dark mode follows the system setting, with readable text; the light scheme stays light", async ({ page, cluster }) => {
  await page.emulateMedia({ colorScheme: "dark" });
  await page.goto(`/clusters/${cluster.id}/servers`);
  await expect(page.getByRole("heading", { name: "Servers & inbounds" })).toBeVisible();
  // Secondary text (text-slate-500) on a server's card.
  const dark = await colours(page, "main section[aria-label^='Server '] p.text-slate-500");
  expect(dark.bodyBg).toBeLessThan(0.05);
  expect(dark.bodyText).toBeGreaterThan(0.7);
  expect(dark.bodyRatio).toBeGreaterThanOrEqual(7);
  expect(dark.elBg).toBeLessThan(0.05);
  expect(dark.elRatio).toBeGreaterThanOrEqual(4.5);
  // A status badge keeps its colour and its contrast.
  const badge = await colours(page, "main section[aria-label^='Server '] h2 > span");
  expect(badge.elRatio).toBeGreaterThanOrEqual(4.5);

  // The diagram (React Flow) follows too.
  await page.getByRole("navigation", { name: "Cluster pages" }).getByRole("link", { name: "Diagram" }).click();
  await page.getByRole("button", { name: "Diagram" }).click();
  await expect(page.locator(".react-flow.dark")).toBeVisible();

  await page.emulateMedia({ colorScheme: "light" });
  await page.goto(`/clusters/${cluster.id}/servers`);
  await expect(page.getByRole("heading", { name: "Servers & inbounds" })).toBeVisible();
  const light = await colours(page, "main section[aria-label^='Server '] p.text-slate-500");
  expect(light.bodyBg).toBeGreaterThan(0.9);
  expect(light.bodyText).toBeLessThan(0.05);
  expect(light.elBg).toBeGreaterThan(0.95);
  expect(light.elRatio).toBeGreaterThanOrEqual(4.5);
});
