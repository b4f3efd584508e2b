/**
 * The fleet's control endpoint, an HTTP server on loopback for injecting faults and setting
 * user counts while the fleet runs (`npm run demo`, `npm run fleet`):
 *   GET  /state                                   → { servers: [...] }
 *   POST /fault  { serverId, fault, on, observers?, ms? }
 *   POST /clear  { serverId? }                    → clear faults of one server or all
 *   POST /users  { serverId, users } | { users: { <serverId>: n } }
 */
import http from "node:http";
import type net from "node:net";
import { z } from "zod";
import { formatZodError } from "@/core/monitoring-contract";
import type { Fleet } from "@/server/demo/fleet";
import { SIM_FAULTS } from "@/server/demo/sim-server";

export const faultRequestSchema = z
  .object({
    serverId: z.string().min(1),
    fault: z.enum(SIM_FAULTS),
    on: z.boolean(),
    observers: z.array(z.string().min(1)).max(1000).optional(),
    ms: z.int().min(0).max(600_000).optional(),
  })
  .strict();

const clearRequestSchema = z.object({ serverId: z.string().min(1).optional() }).strict();

const usersRequestSchema = z.union([
  z.object({ serverId: z.string().min(1), users: z.int().min(0) }).strict(),
  z.object({ users: z.record(z.string(), z.int().min(0)) }).strict(),
]);

export interface ControlServer {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

const MAX_BODY = 1024 * 1024;

function readJson(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error("body too large"));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      try {
        resolve(text === "" ? {} : JSON.parse(text));
      } catch {
        reject(new Error("body is not JSON"));
      }
    });
    req.on("error", reject);
  });
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

export async function startControlServer(fleet: Fleet, port: number, host = "127.0.0.1"): Promise<ControlServer> {
  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://control");
      if (req.method === "GET" && url.pathname === "/state") return send(res, 200, fleet.state());
      if (req.method !== "POST") return send(res, 404, { error: "not found" });
      const body = await readJson(req);
      if (url.pathname === "/fault") {
        const p = faultRequestSchema.safeParse(body);
        if (!p.success) return send(res, 400, { error: formatZodError(p.error) });
        const sim = fleet.get(p.data.serverId);
        if (!sim) return send(res, 404, { error: `unknown server ${p.data.serverId}` });
        await sim.setFault(p.data.fault, p.data.on, { observers: p.data.observers, ms: p.data.ms });
        return send(res, 200, sim.state());
      }
      if (url.pathname === "/clear") {
        const p = clearRequestSchema.safeParse(body);
        if (!p.success) return send(res, 400, { error: formatZodError(p.error) });
        const targets = p.data.serverId ? [fleet.get(p.data.serverId)] : [...fleet.servers.values()];
        if (targets.some((t) => !t)) return send(res, 404, { error: `unknown server ${p.data.serverId}` });
        for (const t of targets) await t!.clearFaults();
        return send(res, 200, fleet.state());
      }
      if (url.pathname === "/users") {
        const p = usersRequestSchema.safeParse(body);
        if (!p.success) return send(res, 400, { error: formatZodError(p.error) });
        const entries: [string, number][] =
          "serverId" in p.data ? [[p.data.serverId, p.data.users]] : Object.entries(p.data.users);
        const unknown = entries.find(([id]) => !fleet.get(id));
        if (unknown) return send(res, 404, { error: `unknown server ${unknown[0]}` });
        for (const [id, n] of entries) fleet.get(id)!.setUsers(n);
        return send(res, 200, { ok: true });
      }
      return send(res, 404, { error: "not found" });
    } catch (err) {
      return send(res, 400, { error: (err as Error)?.message ?? String(err) });
    }
  });
  const bound = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve((server.address() as net.AddressInfo).port));
  });
  return {
    port: bound,
    url: `http://${host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
