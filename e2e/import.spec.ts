/**
 * Issue 27 point 1 in the browser: an operator imports each source's fixture (Marzban's
 * database, Remnawave's users JSON, 3x-ui's x-ui.db, a CSV) through the Import dialog, sees
 * the dry run (and a refused run naming its rows), imports; then an imported subscriber's OLD
 * Marzban URL returns their subscription, and a real v2ray client built from it carries
 * traffic through a real agent with the UUID they had before.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, test } from "./fixtures";
import { startV2rayAgent } from "./v2ray-agent";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";
import { fetchViaSocks, freePort, waitForPort } from "./vless-client";
import { parseShareLink, startV2rayLinksClient, type Client } from "./share-link-client";
import { startHttpTarget } from "../agent/test-support";
import { FIXTURE_UUIDS, MARZBAN_SECRET, XUI_SUB_IDS } from "../scripts/import-fixtures";
import { marzbanToken } from "../server/import/legacy";

test.setTimeout(300_000);

const FIXTURES = path.resolve(import.meta.dirname, "../server/import/fixtures");
const CLUSTER_PREFIX = "Import e2e";

test("an operator imports each panel's export in the dialog; an old Marzban URL still serves, and its UUID carries traffic", async ({ page, baseURL }) => {
  expect(fs.existsSync("/usr/bin/v2ray"), "Debian's v2ray is needed: apt-get install v2ray").toBe(true);
  const api = page.request;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "rb-import-"));
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    // The fixtures' UUIDs are unique per install: a cluster left by an earlier attempt goes first.
    for (const c of await trpcQuery<Array<{ id: string; name: string }>>(api, "clusters.list", undefined)) {
      if (c.name.startsWith(CLUSTER_PREFIX)) await trpcMutation(api, "clusters.delete", { clusterId: c.id, confirmName: c.name });
    }
    const target = await startHttpTarget("through an imported UUID ".repeat(2000));
    cleanups.push(() => target.close());
    const cluster = await trpcMutation<{ id: string }>(api, "clusters.create", { name: `${CLUSTER_PREFIX} ${Math.random().toString(36).slice(2, 8)}` });
    await trpcMutation(api, "monitoring.setReportInterval", { clusterId: cluster.id, seconds: 2 });
    await trpcMutation(api, "clusters.setAllowedPrivateDestinations", { clusterId: cluster.id, destinations: [new URL(target.url).host] });
    const server = await trpcMutation<{ id: string; agentToken: string }>(api, "servers.create", { clusterId: cluster.id, name: "imp-1", address: "127.0.0.1" });
    const port = await freePort();
    await trpcMutation(api, "inbounds.create", { serverId: server.id, name: "Plain VLESS", port, security: "none", sni: null });

    // --- the dialog, once per source
    await page.goto(`/clusters/${cluster.id}/subscribers`);
    const importFile = async (source: string, file: string, created: number) => {
      await page.getByRole("button", { name: "Import", exact: true }).click();
      const dialog = page.getByRole("dialog", { name: "Import subscribers" });
      await dialog.getByLabel("Source").selectOption(source);
      await dialog.getByLabel("File").setInputFiles(path.join(FIXTURES, file));
      await dialog.getByRole("button", { name: "Dry run" }).click();
      const report = dialog.getByRole("region", { name: "Import report" });
      await expect(report.getByRole("status")).toHaveText(`Ready: ${created} subscribers would be created. Nothing was written yet.`);
      await dialog.getByRole("button", { name: `Import ${created} subscribers` }).click();
      await expect(report.getByRole("status")).toHaveText(`Imported ${created} subscribers.`);
      await dialog.getByRole("button", { name: "Done" }).click();
      await expect(dialog).toBeHidden();
    };
    await importFile("marzban", "marzban.sqlite3", 5);
    await importFile("remnawave", "remnawave-users.json", 3);
    await importFile("3x-ui", "x-ui.db", 3);
    await importFile("csv", "users.csv", 2);
    await expect(page.getByText("anna", { exact: true }).first()).toBeVisible();

    // The same users again: the dry run names every clash, and there is nothing to import.
    await page.getByRole("button", { name: "Import", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Import subscribers" });
    await dialog.getByLabel("Source").selectOption("marzban");
    await dialog.getByLabel("File").setInputFiles(path.join(FIXTURES, "marzban-dump.sql"));
    await dialog.getByRole("button", { name: "Dry run" }).click();
    await expect(dialog.getByRole("status")).toContainText("rows cannot be imported: fix them and try again. Nothing was written.");
    const refused = dialog.getByRole("table", { name: "Rows refused" });
    await expect(refused.getByRole("row", { name: /user anna .*UUID 3b241101-e2bb-4255-8caf-4136c566a962 belongs to a subscriber already there/ })).toBeVisible();
    await expect(dialog.getByRole("button", { name: /^Import \d/ })).toHaveCount(0);
    await dialog.getByRole("button", { name: "Cancel" }).click();

    // --- what came along: her note, limit and usage on her page
    const subs = await trpcQuery<Array<{ id: string; name: string; token: string | null }>>(api, "subscribers.list", { clusterId: cluster.id });
    const anna = subs.find((s) => s.name === "anna")!;
    await page.goto(`/clusters/${cluster.id}/subscribers/${anna.id}`);
    await expect(page.getByTestId("subscriber-note")).toHaveText("VIP, pays yearly");
    await expect(page.getByTestId("subscriber-used")).toHaveText("1.00 GB / 10.0 GB");

    // --- the old URLs answer as the new ones
    const oldMarzban = `/sub/${marzbanToken("anna", MARZBAN_SECRET, 1_712_345_678)}`;
    const oldBody = await (await api.get(`${oldMarzban}?format=json`)).text();
    expect(oldBody).toBe(await (await api.get(`/sub/${anna.token}?format=json`)).text());
    const ivan = subs.find((s) => s.name === "ivan")!;
    expect(await (await api.get(`/sub/${XUI_SUB_IDS.ivan}`, { headers: { "user-agent": "v2rayNG/1.8" } })).text()).toBe(
      await (await api.get(`/sub/${ivan.token}`, { headers: { "user-agent": "v2rayNG/1.8" } })).text(),
    );
    // The page a browser gets at the old URL is hers: it links her subscription.
    await page.goto(oldMarzban);
    await expect.poll(() => page.content()).toContain(`/sub/${anna.token}`);

    // Rotating ivan's link in the dashboard ends his old URL at once; the other imported
    // users' old URLs stay (the edit re-reads his rows only).
    await page.goto(`/clusters/${cluster.id}/subscribers`);
    await page.getByRole("button", { name: "Rotate link of ivan" }).click();
    await page.getByRole("dialog", { name: "Rotate the link of ivan?" }).getByRole("button", { name: "Rotate link" }).click();
    const newLink = (await page.getByRole("dialog", { name: "Subscription link of ivan" }).getByTestId("subscription-link").textContent())!.trim();
    await page.getByRole("button", { name: "Done" }).click();
    await expect.poll(async () => (await api.get(`/sub/${XUI_SUB_IDS.ivan}`)).status()).toBe(404);
    expect((await api.get(newLink)).status()).toBe(200);
    expect((await api.get(`${oldMarzban}?format=json`)).status()).toBe(200);
    expect((await api.get("/sub/leoOldToken001?format=json")).status()).toBe(200);

    // --- a real agent serving the inbound with Debian's v2ray
    const { stop: stopAgent } = await startV2rayAgent(baseURL!, server.agentToken, path.join(work, "agent"));
    cleanups.push(stopAgent);

    // --- the client built from what the OLD URL returns, with the UUID anna had on Marzban
    const answer = JSON.parse(await (await api.get(`${oldMarzban}?format=json`)).text()) as { routes: Array<{ link: string }> };
    const routes = answer.routes;
    const link = parseShareLink(routes.find((r) => r.link.startsWith("vless://"))!.link);
    expect(link).toMatchObject({ protocol: "vless", credential: FIXTURE_UUIDS.anna, port });
    const client: Client = await startV2rayLinksClient([link], "/dev/null");
    cleanups.push(() => client.stop());
    const used = async () => (await trpcQuery<Array<{ id: string; trafficUsedBytes: number }>>(api, "subscribers.list", { clusterId: cluster.id })).find((s) => s.id === anna.id)!.trafficUsedBytes;
    const before = await used();
    expect(before).toBe(1024 ** 3); // her Marzban usage came along
    await waitForPort(port);
    await expect
      .poll(async () => (await fetchViaSocks(client.socksPorts[0]!, target.url).catch(() => ({ status: 0, body: "" }))).status, { timeout: 60_000 })
      .toBe(200);
    await expect.poll(used, { timeout: 60_000 }).toBeGreaterThan(before);
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    fs.rmSync(work, { recursive: true, force: true });
  }
});
