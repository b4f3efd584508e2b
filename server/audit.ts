import type { DbOrTx } from "@/db/client";
import { auditLog } from "@/db/schema";
import type { SessionOperator } from "@/server/auth/sessions";
import { redactForAudit } from "@/server/secrets";

export interface AuditEntry {
  clusterId: string | null;
  action: string;
  entityType: string;
  entityId?: string | null;
  summary: string;
  before?: unknown;
  after?: unknown;
}

/**
 * Records who changed what, inside the same transaction as the change itself. Secret values
 * (probe header values, credential-named fields) are masked here, so the log never holds them.
 */
export async function recordAudit(db: DbOrTx, operator: Pick<SessionOperator, "operatorId" | "username"> | null, entry: AuditEntry) {
  await db.insert(auditLog).values({
    clusterId: entry.clusterId,
    operatorId: operator?.operatorId ?? null,
    operatorName: operator?.username ?? "system",
    action: entry.action,
    entityType: entry.entityType,
    entityId: entry.entityId ?? null,
    summary: entry.summary,
    before: (redactForAudit(entry.before) ?? null) as never,
    after: (redactForAudit(entry.after) ?? null) as never,
  });
}
