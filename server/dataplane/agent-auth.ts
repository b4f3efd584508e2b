/**
 * Agent token → server, answered from memory: every report and every config poll starts
 * here, so a database round trip per request would cost more than the rest of a report.
 * The map is dropped on "topology" and "settings" changes (token rotation, server deletion,
 * report interval), on this instance and, through the change bus, on every other one.
 * A miss still asks the database, so a token created on another instance works at once.
 */
import "server-only";
import type { IncomingMessage, ServerResponse } from "node:http";
import { eq } from "drizzle-orm";
import { type Db } from "@/db/client";
import { getDb } from "@/server/db";
import { clusters, servers } from "@/db/schema";
import { onChange } from "@/server/bus";
import { isDatabaseDown } from "@/server/db-errors";
import { hashAgentToken } from "@/server/auth/tokens";
import { sendJson } from "@/server/http/util";

export interface AgentServer {
  serverId: string;
  clusterId: string;
  reportIntervalS: number;
  /** The link speed the operator gave for it ("Report capacity"): what no report or load may claim to exceed. */
  reportCapacityMbps: number;
}

/** The token of `Authorization: Bearer <token>`, or null. */
export function bearerToken(authorization: string | undefined): string | null {
  if (!authorization) return null;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  return m ? m[1]! : null;
}

const MAX_ENTRIES = 100_000;

interface CacheState {
  byHash: Map<string, AgentServer>;
  generation: number;
  off?: () => void;
}
const KEY = Symbol.for("routeboard.agentAuth");
function state(): CacheState {
  const g = globalThis as typeof globalThis & { [KEY]?: CacheState };
  if (!g[KEY]) {
    const s: CacheState = { byHash: new Map(), generation: 0 };
    s.off = onChange((e) => {
      if (e.kind === "topology" || e.kind === "settings") {
        s.byHash.clear();
        s.generation++;
      }
    });
    g[KEY] = s;
  }
  return g[KEY];
}

/** The server a bearer token belongs to, or null for a missing or unknown token. */
export async function authenticateAgent(db: Db, authorization: string | undefined): Promise<AgentServer | null> {
  const token = bearerToken(authorization);
  if (!token) return null;
  const hash = hashAgentToken(token);
  const s = state();
  const hit = s.byHash.get(hash);
  if (hit) return hit;
  const generation = s.generation;
  const [row] = await db
    .select({ serverId: servers.id, clusterId: servers.clusterId, reportIntervalS: clusters.reportIntervalS, reportCapacityMbps: servers.reportCapacityMbps })
    .from(servers)
    .innerJoin(clusters, eq(clusters.id, servers.clusterId))
    .where(eq(servers.agentTokenHash, hash));
  if (!row) return null;
  // A change that arrived while we were reading may have made this row stale: do not keep it.
  if (generation === s.generation) {
    if (s.byHash.size >= MAX_ENTRIES) s.byHash.clear();
    s.byHash.set(hash, row);
  }
  return row;
}

/**
 * The agent behind a request, or null once the refusal has been sent: 503 + Retry-After
 * while the database is away, 401 for a missing or unknown token (never a 500). `outcome`
 * counts the refusal in the caller's metric; `db` is the route's database (the process's by default).
 */
export async function agentOrRefuse(
  req: IncomingMessage,
  res: ServerResponse,
  outcome: (o: "unavailable" | "unauthorized") => void,
  db: () => Promise<Db> = getDb,
): Promise<AgentServer | null> {
  const agent = await authenticateAgent(await db(), req.headers.authorization).catch((err: unknown) => {
    if (isDatabaseDown(err)) return "down" as const;
    throw err;
  });
  if (agent === "down") {
    outcome("unavailable");
    sendJson(res, 503, { error: "the panel's database is unreachable: retry shortly" }, { "retry-after": "5" });
    req.resume();
    return null;
  }
  if (!agent) {
    outcome("unauthorized");
    const error = req.headers.authorization ? "unknown agent token" : "missing bearer token: send Authorization: Bearer <agent token>";
    sendJson(res, 401, { error }, { "www-authenticate": "Bearer" });
    req.resume();
    return null;
  }
  return agent;
}
