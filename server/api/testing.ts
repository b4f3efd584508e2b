/** Tests call procedures directly (createCaller) with the context of a signed-in operator. */
import { afterAll, beforeAll } from "vitest";
import type { Db } from "@/db/client";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { onChange, type ChangeEvent } from "@/server/bus";
import type { OperatorRole } from "@/server/auth/sessions";
import type { Context } from "./trpc";

export function operatorContext(db: Db, operatorId: string, username: string, role: OperatorRole): Context {
  return {
    db,
    operator: { sessionId: `s-${username}`, operatorId, username, role, twoFactor: false },
    clientAddress: "127.0.0.1",
    userAgent: "vitest",
    secureCookies: false,
    setCookie: () => {},
  };
}

/** An admin ("ada") and a viewer ("vic") on a test database, as procedure callers. */
export async function adminAndViewer(db: Db) {
  const { createCaller } = await import("./root");
  const { operators } = await import("@/db/schema");
  const [a, v] = await db
    .insert(operators)
    .values([
      { username: "ada", passwordHash: "x", role: "admin" },
      { username: "vic", passwordHash: "x", role: "viewer" },
    ])
    .returning();
  return {
    admin: createCaller(operatorContext(db, a!.id, "ada", "admin")),
    viewer: createCaller(operatorContext(db, v!.id, "vic", "viewer")),
  };
}

/** The code, message and per-field messages a procedure call failed with ("no error" if it did not). */
export async function failure(p: Promise<unknown>): Promise<{ code: string; message: string; fieldErrors: Record<string, string> }> {
  const { TRPCError } = await import("@trpc/server");
  try {
    await p;
  } catch (err) {
    if (!(err instanceof TRPCError)) return { code: `not a TRPCError: ${String(err)}`, message: "", fieldErrors: {} };
    const cause = err.cause as { issues?: Array<{ path: PropertyKey[]; message: string }> } | undefined;
    return {
      code: err.code,
      message: err.message,
      fieldErrors: Object.fromEntries((cause?.issues ?? []).map((i) => [i.path.join("."), i.message])),
    };
  }
  return { code: "no error", message: "", fieldErrors: {} };
}

/** Row counts and inbound placement, to show that a refused request changed nothing. */
export async function tableSnapshot(db: Db) {
  const { count } = await import("drizzle-orm");
  const { auditLog, inbounds, routes, servers, subscribers } = await import("@/db/schema");
  const n = async (table: typeof routes | typeof servers | typeof inbounds | typeof subscribers | typeof auditLog) =>
    (await db.select({ n: count() }).from(table))[0]!.n;
  const rows = await db.select().from(inbounds);
  return {
    routes: await n(routes),
    servers: await n(servers),
    inbounds: await n(inbounds),
    subscribers: await n(subscribers),
    audit: await n(auditLog),
    inboundState: rows.map((r) => `${r.id}:${r.routeId}:${r.port}:${r.name}:${r.isFallback}`).sort(),
  };
}

export async function inboundNamed(db: Db, clusterId: string, name: string) {
  const { eq } = await import("drizzle-orm");
  const { inbounds } = await import("@/db/schema");
  const row = (await db.select().from(inbounds).where(eq(inbounds.clusterId, clusterId))).find((r) => r.name === name);
  if (!row) throw new Error(`no inbound ${name}`);
  return row;
}

export async function routeNamed(db: Db, clusterId: string, name: string) {
  const { eq } = await import("drizzle-orm");
  const { routes } = await import("@/db/schema");
  return (await db.select().from(routes).where(eq(routes.clusterId, clusterId))).find((r) => r.name === name);
}

export type Caller = Awaited<ReturnType<typeof adminAndViewer>>["admin"];

/** What a router suite works on: a test database with the demo cluster, an admin and a viewer. */
export interface SeededSuite {
  t: TestDatabase;
  clusterId: string;
  admin: Caller;
  viewer: Caller;
}

/**
 * Opens the suite's database before its tests (demo cluster, admin, viewer), hands it to
 * `ready`, collects the change events published meanwhile into `events`, and closes it after.
 */
export function seededSuite(kind: Parameters<typeof openTestDatabase>[0], ready: (s: SeededSuite) => void, events?: ChangeEvent[]): void {
  let suite: SeededSuite | undefined;
  let stop: (() => void) | undefined;
  beforeAll(async () => {
    const t = await openTestDatabase(kind);
    const { admin, viewer } = await adminAndViewer(t.db);
    const { seedDemoCluster } = await import("@/server/demo/seed");
    suite = { t, admin, viewer, clusterId: await seedDemoCluster(t.db, "Demo") };
    if (events) stop = onChange((e) => events.push(e));
    ready(suite);
  });
  afterAll(async () => {
    stop?.();
    await suite?.t.dispose();
  });
}
