/**
 * How many users a cluster's routes serve: every subscriber who may connect now gets one
 * line per non-empty route (the balancer picks an inbound of each), so this one number is
 * the users of each route. The count is mayConnect in SQL (accessSql, access.ts).
 */
import { and, count, eq } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { subscribers } from "@/db/schema";
import { accessSql } from "./access";

export async function countRouteUsers(db: DbOrTx, clusterId: string, now = new Date()): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(subscribers)
    .where(and(eq(subscribers.clusterId, clusterId), accessSql(now).mayConnect));
  return Number(row?.n ?? 0);
}
