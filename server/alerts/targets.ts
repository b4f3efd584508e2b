/**
 * Alert targets (webhook, Telegram): input rules, create/edit/delete with audit, the list the
 * alerts page shows (secrets masked, delivery state), and Send test. Targets are
 * installation-wide like the team, optionally narrowed to one cluster (server/alerts).
 */
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "@/db/client";
import { alertDeliveries, alertTargets, clusters } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import type { SessionOperator } from "@/server/auth/sessions";
import { uniqueViolation } from "@/server/db-errors";
import { MASKED } from "@/server/secrets";
import { idSchema, nameSchema } from "@/core/validation";
import { ALERT_EVENT_TYPES, isAlertEventType, type AlertEventType } from "@/server/alerts/events";
import { enqueueAlerts } from "@/server/alerts/outbox";
import { alertWorker } from "@/server/alerts/worker";
import { privateUrlReason } from "@/server/alerts/address-guard";
import { env } from "@/server/env";

type Actor = Pick<SessionOperator, "operatorId" | "username"> | null;

/** A field the operator must fix; the router turns it into a field-named 400 (or 409). */
export class AlertInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
    readonly code: "BAD_REQUEST" | "CONFLICT" | "NOT_FOUND" = "BAD_REQUEST",
  ) {
    super(message);
  }
}

const URL_MESSAGE = "URL must be an http:// or https:// address";
const SECRET_MIN = 16;
const BOT_TOKEN_RE = /^\d{1,20}:[A-Za-z0-9_-]{20,100}$/;
const CHAT_ID_RE = /^(-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$/;

export function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && u.hostname.length > 0;
  } catch {
    return false;
  }
}

/** A stored secret is kept when the form sends nothing, an empty string, or the mask it was shown. */
const keepStored = (v: string | undefined) => v === undefined || v === "" || v === MASKED;

const targetFields = {
  name: nameSchema,
  kind: z.enum(["webhook", "telegram"], { error: "Kind must be webhook or telegram" }),
  clusterId: idSchema.nullable().default(null),
  url: z.string().max(2000, "URL must be at most 2000 characters").optional(),
  secret: z.string().max(200, "Secret must be at most 200 characters").optional(),
  botToken: z.string().max(200, "Bot token must be at most 200 characters").optional(),
  chatId: z.string().max(64, "Chat id must be at most 64 characters").optional(),
  events: z.array(z.string().max(64), { error: "Events must be a list of event types" }).max(ALERT_EVENT_TYPES.length * 2),
  enabled: z.boolean().default(true),
};

type TargetFields = {
  kind: "webhook" | "telegram";
  url?: string;
  secret?: string;
  botToken?: string;
  chatId?: string;
  events: string[];
};

/** Field rules that do not need the stored row; `update` allows keeping stored secrets. */
function checkFields(v: TargetFields, ctx: z.RefinementCtx, update: boolean): void {
  const issue = (field: string, message: string) => ctx.addIssue({ code: "custom", path: [field], message });
  if (v.events.length === 0) issue("events", "Pick at least one event");
  const unknown = v.events.find((e) => !isAlertEventType(e));
  if (unknown !== undefined) issue("events", `Unknown event type "${unknown}": use ${ALERT_EVENT_TYPES.join(", ")}`);
  if (v.kind === "webhook") {
    if (!v.url || !isHttpUrl(v.url.trim())) issue("url", URL_MESSAGE);
    if (keepStored(v.secret)) {
      if (!update) issue("secret", "Secret is required: the receiver checks the signature with it");
    } else if (v.secret!.length < SECRET_MIN) issue("secret", `Secret must be at least ${SECRET_MIN} characters`);
  } else {
    if (keepStored(v.botToken)) {
      if (!update) issue("botToken", "Bot token is required (from @BotFather)");
    } else if (!BOT_TOKEN_RE.test(v.botToken!.trim())) issue("botToken", "Bot token looks like 123456789:AAE… (from @BotFather)");
    if (!v.chatId || !CHAT_ID_RE.test(v.chatId.trim())) issue("chatId", "Chat id must be a number (e.g. -1001234567890) or @channelname");
  }
}

export const createAlertTargetSchema = z.object(targetFields).superRefine((v, ctx) => checkFields(v, ctx, false));
export const updateAlertTargetSchema = z.object({ targetId: idSchema, ...targetFields }).superRefine((v, ctx) => checkFields(v, ctx, true));
export type CreateAlertTarget = z.infer<typeof createAlertTargetSchema>;
export type UpdateAlertTarget = z.infer<typeof updateAlertTargetSchema>;

type TargetRow = typeof alertTargets.$inferSelect;

/** ok / retrying (an attempt failed, more are coming) / failing (gave up) / new (nothing sent yet). */
export type TargetState = "ok" | "retrying" | "failing" | "new";

export function targetState(t: Pick<TargetRow, "failing" | "lastDeliveryAt" | "lastFailureAt">, pending: number): TargetState {
  if (t.failing) return "failing";
  const failedLast = t.lastFailureAt !== null && (t.lastDeliveryAt === null || t.lastFailureAt.getTime() > t.lastDeliveryAt.getTime());
  if (failedLast && pending > 0) return "retrying";
  if (t.lastDeliveryAt !== null) return "ok";
  return "new";
}

/** What the alerts page and API clients see: secrets masked. */
function targetView(t: TargetRow, clusterName: string | null) {
  return {
    id: t.id,
    name: t.name,
    kind: t.kind as "webhook" | "telegram",
    clusterId: t.clusterId,
    clusterName,
    url: t.url,
    secret: t.secret === null ? null : MASKED,
    botToken: t.botToken === null ? null : MASKED,
    chatId: t.chatId,
    events: t.events.filter(isAlertEventType) as AlertEventType[],
    enabled: t.enabled,
    lastDeliveryAt: t.lastDeliveryAt,
    lastFailureAt: t.lastFailureAt,
    lastError: t.lastError,
  };
}

/** Every target with its state, pending count and last few deliveries. */
export async function listAlertTargets(db: Db) {
  const rows = await db
    .select({ t: alertTargets, clusterName: clusters.name })
    .from(alertTargets)
    .leftJoin(clusters, eq(clusters.id, alertTargets.clusterId))
    .orderBy(asc(sql`lower(${alertTargets.name})`));
  const ids = rows.map((r) => r.t.id);
  const pending = new Map<string, number>();
  const recent = new Map<string, Array<{ id: number; type: string; state: string; attempts: number; lastError: string | null; occurredAt: Date; deliveredAt: Date | null }>>();
  if (ids.length > 0) {
    for (const p of await db
      .select({ targetId: alertDeliveries.targetId, n: sql<number>`count(*)::int` })
      .from(alertDeliveries)
      .where(and(inArray(alertDeliveries.targetId, ids), eq(alertDeliveries.state, "pending")))
      .groupBy(alertDeliveries.targetId)) {
      pending.set(p.targetId, Number(p.n));
    }
    // The last 5 deliveries of each target (lateral join: one index scan per target).
    const last = await db.execute<{ target_id: string; id: string | number; type: string; state: string; attempts: number; last_error: string | null; occurred_at: string | Date; delivered_at: string | Date | null }>(sql`
      select t.id as target_id, d.id, e.type, d.state, d.attempts, d.last_error, e.occurred_at, d.delivered_at
      from alert_targets t
      cross join lateral (select * from alert_deliveries d where d.target_id = t.id order by d.id desc limit 5) d
      join alert_events e on e.id = d.event_id
      where t.id = any(${`{${ids.join(",")}}`}::uuid[])
      order by d.id desc`);
    const lastRows = (Array.isArray(last) ? last : (last as { rows: unknown[] }).rows) as Array<{ target_id: string; id: string | number; type: string; state: string; attempts: number; last_error: string | null; occurred_at: string | Date; delivered_at: string | Date | null }>;
    for (const r of lastRows) {
      const list = recent.get(r.target_id) ?? [];
      list.push({ id: Number(r.id), type: r.type, state: r.state, attempts: r.attempts, lastError: r.last_error, occurredAt: new Date(r.occurred_at), deliveredAt: r.delivered_at ? new Date(r.delivered_at) : null });
      recent.set(r.target_id, list);
    }
  }
  return rows.map(({ t, clusterName }) => {
    const n = pending.get(t.id) ?? 0;
    return { ...targetView(t, clusterName), state: targetState(t, n), pending: n, recent: recent.get(t.id) ?? [] };
  });
}

async function assertCluster(db: Pick<Db, "select">, clusterId: string | null): Promise<void> {
  if (clusterId === null) return;
  const [c] = await db.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, clusterId));
  if (!c) throw new AlertInputError("clusterId", "No such cluster");
}

function storedFields(input: CreateAlertTarget | UpdateAlertTarget, prev: TargetRow | null) {
  const events = [...new Set(input.events)];
  if (input.kind === "webhook") {
    return { url: input.url!.trim(), secret: keepStored(input.secret) ? (prev?.secret ?? null) : input.secret!, botToken: null, chatId: null, events };
  }
  return { url: null, secret: null, botToken: keepStored(input.botToken) ? (prev?.botToken ?? null) : input.botToken!.trim(), chatId: input.chatId!.trim(), events };
}

/** Whether webhooks may point at loopback/private addresses (ROUTEBOARD_ALERTS_ALLOW_PRIVATE). */
export interface AlertAddressPolicy {
  allowPrivate: boolean;
}
const envPolicy = (): AlertAddressPolicy => ({ allowPrivate: env().ROUTEBOARD_ALERTS_ALLOW_PRIVATE });

/** A webhook URL naming this machine or a private network is refused on save, naming `url`. */
function assertPublicUrl(input: CreateAlertTarget | UpdateAlertTarget, policy: AlertAddressPolicy): void {
  if (input.kind !== "webhook" || policy.allowPrivate || !input.url) return;
  const reason = privateUrlReason(input.url.trim());
  if (reason !== null) throw new AlertInputError("url", reason);
}

function audited(t: TargetRow) {
  return { name: t.name, kind: t.kind, clusterId: t.clusterId, url: t.url, chatId: t.chatId, events: t.events, enabled: t.enabled, secret: t.secret, botToken: t.botToken };
}

function conflictOrRethrow(err: unknown, name: string): never {
  if (uniqueViolation(err)) throw new AlertInputError("name", `An alert target named ${name} already exists`, "CONFLICT");
  throw err;
}

export async function createAlertTarget(db: Db, actor: Actor, input: CreateAlertTarget, policy: AlertAddressPolicy = envPolicy()) {
  assertPublicUrl(input, policy);
  try {
    return await db.transaction(async (tx) => {
      await assertCluster(tx, input.clusterId);
      const fields = storedFields(input, null);
      const [t] = await tx.insert(alertTargets).values({ name: input.name, kind: input.kind, clusterId: input.clusterId, enabled: input.enabled, ...fields }).returning();
      await recordAudit(tx, actor, { clusterId: t!.clusterId, action: "alert_target.create", entityType: "alert_target", entityId: t!.id, summary: `Added ${t!.kind} alert target ${t!.name}`, after: audited(t!) });
      return targetView(t!, null);
    });
  } catch (err) {
    conflictOrRethrow(err, input.name);
  }
}

export async function updateAlertTarget(db: Db, actor: Actor, input: UpdateAlertTarget, policy: AlertAddressPolicy = envPolicy()) {
  assertPublicUrl(input, policy);
  try {
    return await db.transaction(async (tx) => {
      const [prev] = await tx.select().from(alertTargets).where(eq(alertTargets.id, input.targetId)).for("update");
      if (!prev) throw new AlertInputError("targetId", "No such alert target", "NOT_FOUND");
      await assertCluster(tx, input.clusterId);
      const fields = storedFields(input, prev);
      if (input.kind === "webhook" && !fields.secret) throw new AlertInputError("secret", "Secret is required: the receiver checks the signature with it");
      if (input.kind === "telegram" && !fields.botToken) throw new AlertInputError("botToken", "Bot token is required (from @BotFather)");
      const changedWhere = input.kind !== prev.kind || fields.url !== prev.url || fields.secret !== prev.secret || fields.botToken !== prev.botToken || fields.chatId !== prev.chatId;
      const [t] = await tx
        .update(alertTargets)
        .set({
          name: input.name,
          kind: input.kind,
          clusterId: input.clusterId,
          enabled: input.enabled,
          ...fields,
          // A new address or credential starts with a clean slate: the old failures were not its own.
          ...(changedWhere ? { failing: false, lastError: null, lastFailureAt: null } : {}),
          updatedAt: new Date(),
        })
        .where(eq(alertTargets.id, prev.id))
        .returning();
      await recordAudit(tx, actor, { clusterId: t!.clusterId, action: "alert_target.update", entityType: "alert_target", entityId: t!.id, summary: `Changed alert target ${t!.name}`, before: audited(prev), after: audited(t!) });
      return targetView(t!, null);
    });
  } catch (err) {
    conflictOrRethrow(err, input.name);
  }
}

export async function deleteAlertTarget(db: Db, actor: Actor, targetId: string): Promise<{ ok: true }> {
  await db.transaction(async (tx) => {
    const [t] = await tx.delete(alertTargets).where(eq(alertTargets.id, targetId)).returning();
    if (!t) throw new AlertInputError("targetId", "No such alert target", "NOT_FOUND");
    await recordAudit(tx, actor, { clusterId: t.clusterId, action: "alert_target.delete", entityType: "alert_target", entityId: t.id, summary: `Removed alert target ${t.name}`, before: audited(t) });
  });
  return { ok: true };
}

/**
 * Queues a "test" event for one target through the same outbox and worker as real alerts
 * (one attempt: the page shows at once whether it arrived). Returns the event id.
 */
export async function sendTestAlert(db: Db, actor: Actor, targetId: string, nowMs = Date.now()): Promise<{ eventId: string }> {
  const eventId = await db.transaction(async (tx) => {
    const [t] = await tx.select().from(alertTargets).where(eq(alertTargets.id, targetId));
    if (!t) throw new AlertInputError("targetId", "No such alert target", "NOT_FOUND");
    if (!t.enabled) throw new AlertInputError("targetId", "This target is disabled: enable it to send a test");
    const [id] = await enqueueAlerts(
      tx,
      [{ type: "test", clusterId: t.clusterId, data: { message: "Test alert from Routeboard", target: { id: t.id, name: t.name }, requestedBy: actor?.username ?? null } }],
      nowMs,
      t.id,
    );
    return id!;
  });
  alertWorker()?.kick();
  return { eventId };
}
