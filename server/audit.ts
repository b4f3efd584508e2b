import type { DbOrTx } from "@/db/client";
import { auditLog } from "@/db/schema";
import type { SessionOperator } from "@/server/auth/sessions";

export interface AuditEntry {
  clusterId: string | null;
  action: string;
  entityType: string;
  entityId?: string | null;
  summary: string;
  before?: unknown;
  after?: unknown;
}

/** Records who changed what, inside the same transaction as the change itself. */
export async function recordAudit(db: DbOrTx, operator: Pick<SessionOperator, "operatorId" | "username"> | null, entry: AuditEntry) {
  await db.insert(auditLog).values({
    clusterId: entry.clusterId,
    operatorId: operator?.operatorId ?? null,
    operatorName: operator?.username ?? "system",
    action: entry.action,
    entityType: entry.entityType,
    entityId: entry.entityId ?? null,
    summary: entry.summary,
    before: (entry.before ?? null) as never,
    after: (entry.after ?? null) as never,
  });
}
