import http from "node:http";
import type net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { z } from "zod";
import { createTRPCRouter, publicProcedure } from "./trpc";

/** What clients read in error messages (issue 11: refusals name the field; 500s leak nothing). */
describe("tRPC error messages", () => {
  const router = createTRPCRouter({
    boom: publicProcedure.query(() => {
      throw new Error('Failed query: insert into "audit_log" params: secret-value');
    }),
    strict: publicProcedure.input(z.object({ clusterId: z.uuid(), n: z.int().min(1) })).query(() => "ok"),
  });
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    server = http.createServer(createHTTPHandler({ router, basePath: "/api/trpc/", createContext: () => ({}) as never }));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/api/trpc`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const call = async (path: string, input?: unknown) => {
    const q = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify({ json: input }))}`;
    const res = await fetch(`${url}/${path}${q}`);
    return { status: res.status, message: ((await res.json()) as { error: { json: { message: string } } }).error.json.message };
  };

  it("a 500 does not show the thrown error's text", async () => {
    const r = await call("boom");
    expect(r.status).toBe(500);
    expect(r.message).not.toMatch(/Failed query|secret-value/);
  });

  it("a refused input names the first field, or 'input' for the root", async () => {
    expect(await call("strict", { clusterId: "nope", n: 1 })).toMatchObject({ status: 400, message: expect.stringMatching(/^clusterId: /) });
    expect(await call("strict", { clusterId: "6f1c6c1e-6c2a-4d8e-9d8c-0a1b2c3d4e5f", n: 0 })).toMatchObject({ status: 400, message: expect.stringMatching(/^n: /) });
    expect(await call("strict", null)).toMatchObject({ status: 400, message: expect.stringMatching(/^input: /) });
  });
});
