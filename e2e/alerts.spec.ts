/**
 * The alerts page: an admin adds a webhook pointing at a receiver started here on 127.0.0.1,
 * presses Send test, sees it delivered, and the receiver got a body with a valid signature;
 * a target whose receiver answers 500 shows "failing" with the status (not the receiver's
 * text). Bad input is named.
 * And the real thing: an agent report saying the listener is down reaches a webhook as a
 * signed server.down.
 */
import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { test, expect } from "./fixtures";
import { trpcMutation } from "../scripts/harness/trpc";

interface Hit {
  headers: IncomingHttpHeaders;
  body: string;
}

async function receiver(status: number) {
  const hits: Hit[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      hits.push({ headers: req.headers, body });
      res.statusCode = status;
      res.end(status >= 400 ? "receiver says no" : "ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    hits,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const SECRET = "e2e-secret-0123456789abcdef";

async function addTarget(page: import("@playwright/test").Page, name: string, url: string) {
  await page.getByRole("button", { name: "Add target" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("Name").fill(name);
  await dialog.getByLabel("URL").fill(url);
  await dialog.getByLabel("Secret").fill(SECRET);
  // Only the test event is expected here: other specs' clusters change status meanwhile.
  for (const label of ["Server down", "Server back up", "Route in panic", "Route recovered"]) await dialog.getByLabel(label).uncheck();
  await dialog.getByLabel("Agent rejected its config").check();
  await dialog.getByRole("button", { name: "Add target" }).click();
  await expect(dialog).toHaveCount(0);
}

test("a webhook target gets a signed test alert; a receiver answering 500 shows failing", async ({ page }) => {
  const good = await receiver(200);
  const bad = await receiver(500);
  const tag = Math.random().toString(36).slice(2, 8);
  try {
    await page.goto("/clusters");
    await page.getByRole("link", { name: "Alerts" }).click();
    await expect(page.getByRole("heading", { name: "Alerts" })).toBeVisible();

    // Bad input is named next to its field and nothing is saved.
    await page.getByRole("button", { name: "Add target" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("Name").fill(`bad ${tag}`);
    await dialog.getByLabel("URL").fill("ftp://127.0.0.1/x");
    await dialog.getByRole("button", { name: "Add target" }).click();
    await expect(dialog.getByText("URL must be an http:// or https:// address")).toBeVisible();
    await expect(dialog.getByText("Secret is required: the receiver checks the signature with it")).toBeVisible();
    await dialog.getByRole("button", { name: "Cancel" }).click();

    const okName = `hook ${tag}`;
    await addTarget(page, okName, good.url);
    const okCard = page.getByRole("listitem", { name: `Alert target ${okName}` });
    await expect(okCard.getByTestId("target-state")).toHaveText("nothing sent yet");
    await okCard.getByRole("button", { name: `Send test to ${okName}` }).click();
    await expect(okCard.getByTestId("target-state")).toHaveText("ok");
    await expect(okCard.getByRole("cell", { name: /^delivered / })).toBeVisible();
    expect(good.hits).toHaveLength(1);
    const hit = good.hits[0]!;
    expect(hit.headers["x-routeboard-event"]).toBe("test");
    expect(hit.headers["x-routeboard-signature"]).toBe(`sha256=${createHmac("sha256", SECRET).update(hit.body).digest("hex")}`);
    expect(JSON.parse(hit.body)).toMatchObject({ type: "test", data: { target: { name: okName } } });
    // The secret is never shown again: the edit form holds the mask.
    await okCard.getByRole("button", { name: `Edit ${okName}` }).click();
    await expect(page.getByRole("dialog").getByLabel("Secret")).toHaveValue("••••••");
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();

    const badName = `broken ${tag}`;
    await addTarget(page, badName, bad.url);
    const badCard = page.getByRole("listitem", { name: `Alert target ${badName}` });
    await badCard.getByRole("button", { name: `Send test to ${badName}` }).click();
    await expect(badCard.getByTestId("target-state")).toHaveText("failing");
    // The status only: a receiver's answer is never stored or shown.
    await expect(badCard.getByTestId("last-error")).toHaveText("HTTP 500 Internal Server Error");
    expect(bad.hits).toHaveLength(1);

    // Deleting takes it off the page.
    await badCard.getByRole("button", { name: `Delete ${badName}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await expect(badCard).toHaveCount(0);
    await okCard.getByRole("button", { name: `Delete ${okName}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await expect(okCard).toHaveCount(0);
  } finally {
    await good.close();
    await bad.close();
  }
});

test("an agent reporting its listener down reaches the cluster's webhook as a signed server.down", async ({ page, cluster }) => {
  const rx = await receiver(200);
  const tag = Math.random().toString(36).slice(2, 8);
  try {
    // No probes: the agent's reports alone decide (nothing listens on this loopback address).
    await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: cluster.id, config: { enabled: false } });
    const server = await trpcMutation<{ id: string; agentToken: string }>(page.request, "servers.create", { clusterId: cluster.id, name: `alerting-${tag}`, address: "127.0.50.10" });
    const name = `down hook ${tag}`;
    // Only this test's cluster, so other specs' servers do not reach this receiver.
    await trpcMutation(page.request, "alerts.create", { name, kind: "webhook", clusterId: cluster.id, url: rx.url, secret: SECRET, events: ["server.down", "server.up"] });
    const report = async (listenerAlive: boolean) => {
      const res = await page.request.post("/api/agent/report", {
        headers: { authorization: `Bearer ${server.agentToken}` },
        data: { listenerAlive, serviceRunning: true, usersOnline: 0, rxBps: 0, txBps: 0, cpu: 1, memory: 1, neighbours: [] },
      });
      expect(res.status()).toBe(200);
      return (await res.json()) as { status: string };
    };
    expect((await report(true)).status).toBe("healthy");
    expect((await report(false)).status).toBe("unavailable");
    await expect.poll(() => rx.hits.length, { timeout: 60_000 }).toBe(1);
    const hit = rx.hits[0]!;
    expect(hit.headers["x-routeboard-event"]).toBe("server.down");
    expect(hit.headers["x-routeboard-signature"]).toBe(`sha256=${createHmac("sha256", SECRET).update(hit.body).digest("hex")}`);
    expect(JSON.parse(hit.body)).toMatchObject({ type: "server.down", cluster: { id: cluster.id, name: cluster.name }, data: { server: { id: server.id, name: `alerting-${tag}` }, from: "healthy", to: "unavailable" } });

    await page.goto("/alerts");
    const card = page.getByRole("listitem", { name: `Alert target ${name}` });
    await expect(card.getByRole("row", { name: /Server down.*delivered/ })).toHaveCount(1);
    await expect(card.getByTestId("target-state")).toHaveText("ok");
    await card.getByRole("button", { name: `Delete ${name}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await expect(card).toHaveCount(0);
  } finally {
    await rx.close();
  }
});
