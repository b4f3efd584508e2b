import { test as base } from "@playwright/test";
import { test, expect, E2E_ADMIN } from "./fixtures";
import { login, trpcMutation, trpcQuery, TrpcCallError } from "../scripts/harness/trpc";
import { startApp } from "../scripts/harness/app";

// Not @pg: it starts an app of its own on PGlite whichever project runs it (the PostgreSQL
// project ran the same PGlite install a second time).
base("first visit on a new install shows setup, then the demo cluster", async ({ page }) => {
  // It starts an app of its own (migrations, demo seed, first compile of every page it opens).
  base.setTimeout(300_000);
  const app = await startApp({ ROUTEBOARD_DEMO: "1" });
  try {
    await page.goto(app.url);
    await expect(page).toHaveURL(/\/setup$/);
    await expect(page.getByRole("heading", { name: "Welcome to Routeboard" })).toBeVisible();
    // Whoever reaches a new install first is not its owner: the setup code is needed.
    await page.getByLabel("Setup code").fill("AAAA-BBBB-CCCC-DDDD");
    await page.getByLabel("Username").fill("founder");
    await page.getByLabel("Password", { exact: true }).fill("correct horse");
    await page.getByLabel("Repeat password").fill("correct horses");
    await page.getByRole("button", { name: "Create owner account" }).click();
    await expect(page.locator("form").getByRole("alert")).toHaveText("The two passwords differ");
    await page.getByLabel("Repeat password").fill("correct horse");
    await page.getByRole("button", { name: "Create owner account" }).click();
    await expect(page.getByText(/^Wrong setup code: it is printed in the server's output/)).toBeVisible();
    await page.getByLabel("Setup code").fill(app.setupCode());
    // "password" was once accepted as the owner's password.
    await page.getByLabel("Password", { exact: true }).fill("password");
    await page.getByLabel("Repeat password").fill("password");
    await page.getByRole("button", { name: "Create owner account" }).click();
    await expect(page.getByText("This password is on the list of common passwords: choose another")).toBeVisible();
    await page.getByLabel("Password", { exact: true }).fill("correct horse");
    await page.getByLabel("Repeat password").fill("correct horse");
    await page.getByRole("button", { name: "Create owner account" }).click();
    await expect(page).toHaveURL(/\/clusters$/);
    await expect(page.getByTestId("current-operator")).toContainText("founder");
    await page.getByRole("link", { name: /Demo cluster/ }).click();
    await expect(page.getByText("us-nyc-1").first()).toBeVisible();
    // The diagram opens at a readable zoom at the top; Fit view shows all four routes.
    await page.getByRole("button", { name: "Fit view" }).click();
    await expect(page.getByText("🇯🇵 Japan").first()).toBeVisible();
    // Setup is once only.
    await page.goto(`${app.url}/setup`);
    await expect(page).not.toHaveURL(/\/setup$/);
    const again = await page.request.post(`${app.url}/api/trpc/auth.setup`, { data: { json: { username: "intruder", password: "whatever123", setupCode: "guess" } } });
    expect(again.status()).toBe(409);
  } finally {
    await app.stop();
  }
});

base("login, wrong password, logout @pg", async ({ page }) => {
  await page.goto("/clusters");
  await expect(page).toHaveURL(/\/login\?next=%2Fclusters$/);
  await page.getByLabel("Username").fill(E2E_ADMIN.username);
  await page.getByLabel("Password").fill("not-the-password");
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page.locator("form").getByRole("alert")).toHaveText("Wrong username or password");
  await page.getByLabel("Password").fill(E2E_ADMIN.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page).toHaveURL(/\/clusters$/);
  await expect(page.getByRole("heading", { name: "Clusters" })).toBeVisible();
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === "rb_session");
  expect(session?.httpOnly).toBe(true);
  expect(session?.sameSite).toBe("Lax");

  await page.getByRole("button", { name: "Log out" }).click();
  await expect(page).toHaveURL(/\/login/);
  // The old session is revoked server-side, not just forgotten by the browser.
  const res = await page.request.get("/api/trpc/clusters.list", { headers: { cookie: `rb_session=${session!.value}` } });
  expect(res.status()).toBe(401);
  await page.goto("/clusters");
  await expect(page).toHaveURL(/\/login/);
});

base("a tRPC call without a session is refused with 401", async ({ request }) => {
  const res = await request.get("/api/trpc/clusters.list");
  expect(res.status()).toBe(401);
  const body = await res.json();
  expect(body.error.json.message).toBe("Please log in");
  expect(JSON.stringify(body)).not.toContain("at ");
  const write = await request.post("/api/trpc/clusters.create", { data: { json: { name: "sneaky" } } });
  expect(write.status()).toBe(401);
});

test("a viewer sees clusters but a write is refused with 403", async ({ page, browser }, testInfo) => {
  const username = `viewer-${Math.random().toString(36).slice(2, 8)}`;
  await trpcMutation(page.request, "operators.create", { username, password: "viewer-password", role: "viewer" });
  const ctx = await browser.newContext({ baseURL: testInfo.project.use.baseURL });
  try {
    await login(ctx.request, username, "viewer-password");
    const clusters = await trpcQuery<unknown[]>(ctx.request, "clusters.list");
    expect(clusters.length).toBeGreaterThan(0);
    const err = await trpcMutation(ctx.request, "clusters.create", { name: "viewer was here" }).catch((e: TrpcCallError) => e);
    expect(err).toBeInstanceOf(TrpcCallError);
    expect((err as TrpcCallError).status).toBe(403);
    const viewerPage = await ctx.newPage();
    await viewerPage.goto("/clusters");
    await expect(viewerPage.getByTestId("current-operator")).toContainText("viewer");
    await expect(viewerPage.getByRole("button", { name: "Create cluster" })).toHaveCount(0);
  } finally {
    await ctx.close();
  }
});

base("repeated failed logins are slowed down with 429 and Retry-After", async ({ request }) => {
  const username = `guesser-${Math.random().toString(36).slice(2, 8)}`;
  let last = 0;
  let retryAfter: string | undefined;
  for (let i = 0; i < 6; i++) {
    const res = await request.post("/api/trpc/auth.login", { data: { json: { username, password: "wrong-password" } } });
    last = res.status();
    retryAfter = res.headers()["retry-after"];
  }
  expect(last).toBe(429);
  expect(Number(retryAfter)).toBeGreaterThan(0);
});

base("GET /api/health reports the database", async ({ request }) => {
  const res = await request.get("/api/health");
  expect(res.status()).toBe(200);
  const body = await res.json();
  expect(body).toMatchObject({ ok: true, database: { reachable: true } });
  expect(typeof body.version).toBe("string");
});

base("login returns to ?next= for paths of this dashboard, never elsewhere (finding 12)", async ({ page, baseURL }) => {
  // An unauthenticated visit remembers the page, query included.
  await page.goto("/team?x=1");
  await expect(page).toHaveURL(/\/login\?next=%2Fteam%3Fx%3D1$/);
  await page.getByLabel("Username").fill(E2E_ADMIN.username);
  await page.getByLabel("Password").fill(E2E_ADMIN.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page).toHaveURL(`${baseURL}/team?x=1`);
  await expect(page.getByRole("heading", { name: "Team" })).toBeVisible();
  // Already logged in: /login?next= goes on at once.
  await page.goto("/login?next=%2Fclusters");
  await expect(page).toHaveURL(`${baseURL}/clusters`);
  for (const evil of ["//evil.example", "https://evil.example", "/\\evil.example", "javascript:alert(1)"]) {
    await page.goto(`/login?next=${encodeURIComponent(evil)}`);
    await expect(page).toHaveURL(`${baseURL}/clusters`);
  }
});

base("a malformed session cookie is no session, not a 500 (finding 7)", async ({ request }) => {
  const status = await request.get("/api/trpc/auth.status", { headers: { cookie: "rb_session=%zz" } });
  expect(status.status()).toBe(200);
  const list = await request.get("/api/trpc/clusters.list", { headers: { cookie: "rb_session=%zz" } });
  expect(list.status()).toBe(401);
});
