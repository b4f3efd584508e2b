/**
 * A small fleet for the stored-choice and subscription tests: `routes` routes of `perRoute`
 * servers each (one inbound per server, no server shared between routes), every server
 * healthy, and `subscribers` subscribers. Security "none" keeps the rows short. It lives in
 * the lower of the two folders: subscription may import assignments, not the other way.
 */
import { eq, inArray, sql } from "drizzle-orm";
import { afterEach, beforeEach } from "vitest";
import type { Db } from "@/db/client";
import { serverHealth } from "@/db/schema";
import { openTestDatabase, type TestDatabase, type TestDbKind } from "@/db/testing";
import { newAgentToken, newSubscriptionToken } from "@/server/auth/tokens";

export interface TestFleet {
  clusterId: string;
  routeIds: string[];
  /** routeId → its servers' ids, in inbound order. */
  serversOf: Map<string, string[]>;
  /** serverId → the route its inbound is in. */
  routeOfServer: Map<string, string>;
  subscribers: Array<{ id: string; token: string }>;
}

export interface TestFleetShape {
  routes: number;
  perRoute: number;
  subscribers: number;
  name?: string;
}

/**
 * For each test of the enclosing describe: a fresh migrated database of `kind` seeded with a
 * fleet of this shape, disposed after the test. Read `db` and `fleet` inside the tests.
 */
export function seedFleetPerTest(kind: TestDbKind, shape: TestFleetShape): { readonly db: Db; readonly fleet: TestFleet } {
  let database: TestDatabase | undefined;
  let fleet: TestFleet | undefined;
  beforeEach(async () => {
    database = await openTestDatabase(kind);
    fleet = await seedTestFleet(database.db, shape);
  });
  afterEach(async () => {
    await database?.dispose();
  });
  return {
    get db() {
      return database!.db;
    },
    get fleet() {
      return fleet!;
    },
  };
}

export async function seedTestFleet(db: Db, opts: TestFleetShape): Promise<TestFleet> {
  // Tables gain columns in later migrations, and drizzle's insert names every column: every
  // row here names only the columns every migration has, so tests of an old migration seed
  // with it too.
  const [c] = rowsOf<{ id: string }>(await db.execute<{ id: string }>(sql`insert into clusters (name) values (${opts.name ?? "Fleet"}) returning id::text as id`));
  const clusterId = c!.id;
  const routeRows: Array<{ id: string }> = [];
  for (let i = 0; i < opts.routes; i++) {
    const [row] = rowsOf<{ id: string }>(await db.execute<{ id: string }>(sql`insert into routes (cluster_id, name, position) values (${clusterId}::uuid, ${`Route ${i}`}, ${i}) returning id::text as id`));
    routeRows.push(row!);
  }
  const serversOf = new Map<string, string[]>();
  const routeOfServer = new Map<string, string>();
  for (const [r, route] of routeRows.entries()) {
    const srv: Array<{ id: string }> = [];
    for (let k = 0; k < opts.perRoute; k++) {
      const [row] = rowsOf<{ id: string }>(
        await db.execute<{ id: string }>(
          sql`insert into servers (cluster_id, name, address, agent_token_hash) values (${clusterId}::uuid, ${`s${r}-${k}`}, ${`10.0.${r}.${k + 1}`}, ${newAgentToken().hash}) returning id::text as id`,
        ),
      );
      srv.push(row!);
    }
    for (const [k, s] of srv.entries()) {
      await db.execute(sql`insert into server_health (server_id, status, ever_succeeded) values (${s.id}::uuid, 'healthy', true)`);
      await db.execute(
        sql`insert into inbounds (cluster_id, server_id, route_id, name, port, security) values (${clusterId}::uuid, ${s.id}::uuid, ${route.id}::uuid, ${`In ${r}-${k}`}, 443, 'none')`,
      );
    }
    serversOf.set(route.id, srv.map((s) => s.id));
    for (const s of srv) routeOfServer.set(s.id, route.id);
  }
  // Only the columns every migration has: tests of an old migration seed with this too.
  const tokens = Array.from({ length: opts.subscribers }, () => newSubscriptionToken());
  const inserted = await db.execute<{ id: string; token: string; name: string }>(
    sql`insert into subscribers (cluster_id, name, token) select ${clusterId}::uuid, 'u' || (x.i - 1), x.t from jsonb_array_elements_text(${JSON.stringify(tokens)}::jsonb) with ordinality as x(t, i) order by x.i returning id::text as id, token, name`,
  );
  const rows = rowsOf<{ id: string; token: string; name: string }>(inserted);
  const subs = [...rows].sort((a, b) => Number(a.name.slice(1)) - Number(b.name.slice(1))).map((r) => ({ id: r.id, token: r.token }));
  return { clusterId, routeIds: routeRows.map((r) => r.id), serversOf, routeOfServer, subscribers: subs };
}

/** The rows of a raw query, whichever driver ran it (node-postgres and PGlite answer alike; drizzle's types differ). */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : (result as { rows: T[] }).rows;
}

export async function setStatus(db: Db, serverIds: string[], status: string): Promise<void> {
  if (serverIds.length === 0) return;
  await db.update(serverHealth).set({ status }).where(inArray(serverHealth.serverId, serverIds));
}

export async function statusOf(db: Db, serverId: string): Promise<string | undefined> {
  const [h] = await db.select({ status: serverHealth.status }).from(serverHealth).where(eq(serverHealth.serverId, serverId));
  return h?.status;
}
