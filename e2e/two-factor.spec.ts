/**
 * A second factor for operators in the browser (issue 27, point 5): enrol from the QR code's
 * secret (the test computes the codes, as an authenticator app does), log in with a code after
 * the password (no session before it), a wrong code refused, a recovery code good once; the
 * owner requires it and another operator is made to enrol before anything else.
 *
 * On an app of its own: the owner of the shared app must keep logging in with a password alone.
 */
import { test, expect, type Page } from "@playwright/test";
import { startApp, type AppProcess } from "../scripts/harness/app";
import { totpCode, totpStep } from "../server/auth/totp";

const OWNER = { username: "owner2fa", password: "two-factor-owner-password" };
const MEMBER = { username: "member2fa", password: "member horse battery staple" };

test.describe.configure({ mode: "serial" });
let app: AppProcess;
let ownerSecret = "";
let recovery: string[] = [];
test.beforeAll(async () => {
  test.setTimeout(300_000);
  app = await startApp({ ADMIN_USERNAME: OWNER.username, ADMIN_PASSWORD: OWNER.password, ROUTEBOARD_DEMO: "0", ROUTEBOARD_DEVTOOLS: "0" }, { readyTimeoutMs: 170_000 });
});
test.afterAll(async () => {
  await app?.stop();
});
test.use({ baseURL: undefined });

async function passwordStep(page: Page, who: { username: string; password: string }) {
  await page.goto(`${app.url}/login`);
  await page.getByLabel("Username").fill(who.username);
  await page.getByLabel("Password").fill(who.password);
  await page.getByRole("button", { name: "Log in" }).click();
}

async function logOut(page: Page) {
  await page.getByRole("button", { name: "Log out" }).click();
  await expect(page).toHaveURL(/\/login/);
}

test("enrol from the QR code's secret; log in with a code after the password; a wrong code is refused; a recovery code works once", async ({ page }) => {
  await passwordStep(page, OWNER);
  await expect(page.getByRole("heading", { name: "Clusters" })).toBeVisible();

  await page.getByRole("button", { name: "Two-factor" }).click();
  const dialog = page.getByRole("dialog", { name: "Two-factor authentication" });
  await dialog.getByRole("button", { name: "Set up two-factor authentication" }).click();
  await expect(dialog.getByRole("img", { name: "QR code to enrol your authenticator app" })).toBeVisible();
  ownerSecret = (await dialog.getByTestId("totp-secret").textContent())!.trim();
  expect(ownerSecret).toMatch(/^[A-Z2-7]{32}$/);
  const enrolStep = totpStep(Date.now());
  await dialog.getByLabel("Code from your app").fill(totpCode(ownerSecret, { step: enrolStep }));
  await dialog.getByRole("button", { name: "Turn on" }).click();
  const codes = dialog.getByTestId("recovery-codes").getByRole("listitem");
  await expect(codes).toHaveCount(10);
  recovery = (await codes.allTextContents()).map((c) => c.trim());
  await dialog.getByRole("button", { name: "I have saved them" }).click();
  await expect(dialog).toBeHidden();
  await logOut(page);

  // The password alone opens nothing: the code step comes, and there is no session yet.
  await passwordStep(page, OWNER);
  const code = page.getByLabel("Authentication code");
  await expect(code).toBeVisible();
  const status = (await (await page.request.get(`${app.url}/api/trpc/auth.status`)).json()) as { result: { data: { json: { operator: unknown } } } };
  expect(status.result.data.json.operator).toBeNull();
  const now = totpCode(ownerSecret, { step: enrolStep + 1 });
  await code.fill(now === "000000" ? "111111" : "000000");
  await page.getByRole("button", { name: "Verify" }).click();
  await expect(page.getByText("Wrong code, or a code already used")).toBeVisible();
  await code.fill(now);
  await page.getByRole("button", { name: "Verify" }).click();
  await expect(page.getByRole("heading", { name: "Clusters" })).toBeVisible();
  await logOut(page);

  // A recovery code: once.
  await passwordStep(page, OWNER);
  await page.getByLabel("Authentication code").fill(recovery[0]!);
  await page.getByRole("button", { name: "Verify" }).click();
  await expect(page.getByRole("heading", { name: "Clusters" })).toBeVisible();
  await logOut(page);
  await passwordStep(page, OWNER);
  await page.getByLabel("Authentication code").fill(recovery[0]!);
  await page.getByRole("button", { name: "Verify" }).click();
  await expect(page.getByText("Wrong code, or a code already used")).toBeVisible();
  await expect(page).toHaveURL(/\/login/);
});

test("the owner requires it: another operator is sent to enrol and can do nothing else until they have", async ({ page, browser }) => {
  // The owner signs in with a recovery code (their app's codes of this half-minute were used above).
  await passwordStep(page, OWNER);
  await page.getByLabel("Authentication code").fill(recovery[1]!);
  await page.getByRole("button", { name: "Verify" }).click();
  await expect(page.getByRole("heading", { name: "Clusters" })).toBeVisible();
  const created = await page.request.post(`${app.url}/api/trpc/operators.create`, { data: { json: { username: MEMBER.username, password: MEMBER.password, role: "admin" } } });
  expect(created.status()).toBe(200);
  await page.goto(`${app.url}/team`);
  const require = page.getByLabel("Require two-factor authentication for every operator");
  // Controlled by the server's answer: checked once the requirement is saved.
  await require.click();
  await expect(require).toBeChecked();
  await expect(page.getByTestId(`two-factor-of-${MEMBER.username}`)).toHaveText("Off");

  const member = await browser.newContext();
  try {
    const mp = await member.newPage();
    await passwordStep(mp, MEMBER);
    await expect(mp.getByRole("heading", { name: "Set up two-factor authentication" })).toBeVisible();
    // Nothing else opens: another page shows the same, and the API refuses.
    await mp.goto(`${app.url}/clusters`);
    await expect(mp.getByRole("heading", { name: "Set up two-factor authentication" })).toBeVisible();
    await expect(mp.getByRole("heading", { name: "Clusters" })).toHaveCount(0);
    const refused = await mp.request.get(`${app.url}/api/trpc/clusters.list`);
    expect(refused.status()).toBe(403);

    await mp.getByRole("button", { name: "Set up two-factor authentication" }).click();
    const secret = (await mp.getByTestId("totp-secret").textContent())!.trim();
    await mp.getByLabel("Code from your app").fill(totpCode(secret, { nowMs: Date.now() }));
    await mp.getByRole("button", { name: "Turn on" }).click();
    await expect(mp.getByTestId("recovery-codes").getByRole("listitem")).toHaveCount(10);
    await mp.getByRole("button", { name: "I have saved them" }).click();
    await expect(mp.getByRole("heading", { name: "Clusters" })).toBeVisible();
    expect((await mp.request.get(`${app.url}/api/trpc/clusters.list`)).status()).toBe(200);
  } finally {
    await member.close();
  }

  // The owner sees it on, and resets it.
  await page.reload();
  await expect(page.getByTestId(`two-factor-of-${MEMBER.username}`)).toHaveText("On");
  await page.getByRole("button", { name: `Reset two-factor of ${MEMBER.username}` }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Reset two-factor" }).click();
  await expect(page.getByTestId(`two-factor-of-${MEMBER.username}`)).toHaveText("Off");
});
