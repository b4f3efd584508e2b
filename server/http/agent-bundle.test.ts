import fs from "node:fs";
import http from "node:http";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentBundleHandler } from "./agent-bundle";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rb-bundle-route-"));
const file = path.join(dir, "routeboard-agent.mjs");
const handler = agentBundleHandler(file);
const server = http.createServer((req, res) => void handler(req, res, new URL(req.url ?? "/", "http://x")));
let base = "";
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/agent/routeboard-agent.mjs`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("GET /agent/routeboard-agent.mjs", () => {
  it("says how to build the bundle when it is missing", async () => {
    const res = await fetch(base);
    expect(res.status).toBe(503);
    expect(await res.text()).toBe("the agent bundle is not built: run npm run build\n");
  });

  it("serves the file as JavaScript with an ETag, 304 on a match, and notices a rebuild", async () => {
    fs.writeFileSync(file, "#!/usr/bin/env node\nconsole.log(1);\n");
    const res = await fetch(base);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await res.text()).toBe("#!/usr/bin/env node\nconsole.log(1);\n");
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect((await fetch(base, { headers: { "if-none-match": etag } })).status).toBe(304);
    fs.writeFileSync(file, "#!/usr/bin/env node\nconsole.log(22);\n");
    const rebuilt = await fetch(base, { headers: { "if-none-match": etag } });
    expect(rebuilt.status).toBe(200);
    expect(rebuilt.headers.get("etag")).not.toBe(etag);
  });
});
