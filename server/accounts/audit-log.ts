/** Reading the audit log of a cluster, newest first, paged by id. */
import { and, desc, eq, lt } from "drizzle-orm";
import type { Db } from "@/db/client";
import { auditLog } from "@/db/schema";
import { redactForAudit } from "@/server/secrets";

/** `cursor`: the id of the last entry already shown; the next page is older. */
export async function listAuditEntries(db: Db, input: { clusterId: string; cursor?: number | null; limit: number }) {
  const rows = await db
    .select()
    .from(auditLog)
    .where(and(eq(auditLog.clusterId, input.clusterId), input.cursor ? lt(auditLog.id, input.cursor) : undefined))
    .orderBy(desc(auditLog.id))
    .limit(input.limit + 1);
  const items = rows.slice(0, input.limit).map((r) => ({
    id: r.id,
    at: r.at,
    operatorName: r.operatorName,
    action: r.action,
    entityType: r.entityType,
    entityId: r.entityId,
    summary: r.summary,
    // Rows recorded before masking existed may still hold secrets: mask on the way out too.
    before: redactForAudit(r.before),
    after: redactForAudit(r.after),
  }));
  return { items, nextCursor: rows.length > input.limit ? items[items.length - 1]!.id : null };
}
