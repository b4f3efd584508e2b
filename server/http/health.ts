import type { RouteHandler } from "./util";
import { sendJson } from "./util";
import { getDatabase } from "@/server/db";
import pkg from "@/package.json" with { type: "json" };
import { instanceInfo } from "@/server/services";

/** GET /api/health: liveness and database reachability. 503 when the database is away. */
export const healthHandler: RouteHandler = async (_req, res) => {
  const started = performance.now();
  let database: { reachable: boolean; kind?: string; latencyMs?: number; error?: string };
  try {
    const d = await getDatabase();
    await Promise.race([d.ping(), new Promise((_, rej) => setTimeout(() => rej(new Error("timed out after 2 s")), 2000))]);
    database = { reachable: true, kind: d.kind, latencyMs: Math.round((performance.now() - started) * 10) / 10 };
  } catch (err) {
    database = { reachable: false, error: (err as Error).message };
  }
  sendJson(res, database.reachable ? 200 : 503, { ok: database.reachable, version: pkg.version, database, instance: instanceInfo() });
};
