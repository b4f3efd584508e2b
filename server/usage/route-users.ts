/**
 * How many users a cluster's routes serve: every subscriber who may connect now gets one
 * line per non-empty route (the balancer picks an inbound of each), so this one number is
 * the users of each route. The count mirrors mayConnect (server/usage/access.ts).
 */
import { and, count, eq, gt, isNull, lt, or } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { subscribers } from "@/db/schema";

export async function countRouteUsers(db: DbOrTx, clusterId: string, now = new Date()): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(subscribers)
    .where(
      and(
        eq(subscribers.clusterId, clusterId),
        eq(subscribers.enabled, true),
        or(isNull(subscribers.expiresAt), gt(subscribers.expiresAt, now)),
        or(isNull(subscribers.trafficLimitBytes), lt(subscribers.trafficUsedBytes, subscribers.trafficLimitBytes)),
      ),
    );
  return Number(row?.n ?? 0);
}
