/**
 * Servers of a cluster. A new server gets an agent token, shown once: the database keeps
 * only its sha256.
 */
import { effectiveStatus } from "@/core/status";
import { TRPCError } from "@trpc/server";
import { asc, eq, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { inbounds, routes, serverHealth, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { fieldError, foreignKeyViolation, uniqueViolation } from "@/server/db-errors";
import { written, type Actor, type Written } from "@/server/changes";
import { inboundView } from "./inbounds";
import { newAgentToken } from "@/server/auth/tokens";

type ServerRow = typeof servers.$inferSelect;

export interface ServerFields {
  name: string;
  address: string;
  role: ServerRow["role"];
  coefficient: number;
  capacityMbps: number | null;
  /** Absent: the default (create) or unchanged (update). */
  reportCapacityMbps?: number;
}

function auditServer(s: ServerRow) {
  return { name: s.name, address: s.address, role: s.role, coefficient: s.coefficient, capacityMbps: s.capacityMbps, reportCapacityMbps: s.reportCapacityMbps, enabled: s.enabled };
}

/** Runs a server write, turning a taken name into CONFLICT on the name field. */
async function namedServer<T>(name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const c = uniqueViolation(err);
    if (c === "servers_name_ci" || c === true) throw fieldError("CONFLICT", "name", `A server named "${name}" already exists in this cluster`);
    throw err;
  }
}

async function lockServer(tx: DbOrTx, serverId: string) {
  const [row] = await tx.select().from(servers).where(eq(servers.id, serverId)).for("update");
  if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "This server no longer exists" });
  return row;
}

/** Servers with their health and inbounds (and the route each inbound is in). */
export async function listServers(db: Db, clusterId: string) {
  const [serverRows, inboundRows] = await Promise.all([
    db
      .select({ server: servers, status: serverHealth.status, statusReason: serverHealth.statusReason })
      .from(servers)
      .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
      .where(eq(servers.clusterId, clusterId))
      .orderBy(asc(servers.name)),
    db
      .select({ inbound: inbounds, routeName: routes.name, routeFlag: routes.flag })
      .from(inbounds)
      .leftJoin(routes, eq(routes.id, inbounds.routeId))
      .where(eq(inbounds.clusterId, clusterId))
      .orderBy(asc(inbounds.port)),
  ]);
  return serverRows.map(({ server: s, status, statusReason }) => ({
    id: s.id,
    name: s.name,
    address: s.address,
    role: s.role,
    coefficient: s.coefficient,
    capacityMbps: s.capacityMbps,
    reportCapacityMbps: s.reportCapacityMbps,
    enabled: s.enabled,
    // Just re-enabled: the monitor has not re-evaluated it yet.
    status: effectiveStatus(s.enabled, status),
    statusReason: statusReason ?? null,
    createdAt: s.createdAt,
    inbounds: inboundRows.filter((r) => r.inbound.serverId === s.id).map((r) => ({ ...inboundView(r.inbound), routeName: r.routeName, routeFlag: r.routeFlag })),
  }));
}

/** Adds a server; the answer carries its agent token, which is never shown again. */
export async function createServer(
  db: Db,
  actor: Actor,
  input: ServerFields & { clusterId: string; enabled: boolean },
): Promise<Written<{ id: string; name: string; agentToken: string }>> {
  const { token, hash } = newAgentToken();
  try {
    return await namedServer(input.name, async () => {
      const server = await db.transaction(async (tx) => {
        const [s] = await tx
          .insert(servers)
          .values({
            clusterId: input.clusterId,
            name: input.name,
            address: input.address,
            role: input.role,
            coefficient: input.coefficient,
            capacityMbps: input.capacityMbps,
            ...(input.reportCapacityMbps !== undefined ? { reportCapacityMbps: input.reportCapacityMbps } : {}),
            enabled: input.enabled,
            agentTokenHash: hash,
          })
          .returning();
        await tx.insert(serverHealth).values({ serverId: s!.id, status: "pending" });
        await recordAudit(tx, actor, {
          clusterId: input.clusterId,
          action: "server.create",
          entityType: "server",
          entityId: s!.id,
          summary: `Added server ${s!.name} (${s!.address})`,
          after: auditServer(s!),
        });
        return s!;
      });
      return written({ id: server.id, name: server.name, agentToken: token }, { kind: "topology", clusterId: input.clusterId });
    });
  } catch (err) {
    if (foreignKeyViolation(err)) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    throw err;
  }
}

export function updateServer(
  db: Db,
  actor: Actor,
  input: ServerFields & { serverId: string; enabled?: boolean },
): Promise<Written<{ id: string; clusterId: string }>> {
  return namedServer(input.name, async () => {
    const result = await db.transaction(async (tx) => {
      const before = await lockServer(tx, input.serverId);
      const [after] = await tx
        .update(servers)
        .set({
          name: input.name,
          address: input.address,
          role: input.role,
          coefficient: input.coefficient,
          capacityMbps: input.capacityMbps,
          reportCapacityMbps: input.reportCapacityMbps ?? before.reportCapacityMbps,
          enabled: input.enabled ?? before.enabled,
          version: sql`${servers.version} + 1`,
          updatedAt: new Date(),
        })
        .where(eq(servers.id, input.serverId))
        .returning();
      await recordAudit(tx, actor, {
        clusterId: before.clusterId,
        action: "server.update",
        entityType: "server",
        entityId: before.id,
        summary: `Edited server ${after!.name}`,
        before: auditServer(before),
        after: auditServer(after!),
      });
      return { id: after!.id, clusterId: after!.clusterId };
    });
    return written(result, { kind: "topology", clusterId: result.clusterId });
  });
}

export async function setServerEnabled(
  db: Db,
  actor: Actor,
  input: { serverId: string; enabled: boolean },
): Promise<Written<{ id: string; clusterId: string; enabled: boolean }>> {
  const result = await db.transaction(async (tx) => {
    const before = await lockServer(tx, input.serverId);
    await tx
      .update(servers)
      .set({ enabled: input.enabled, version: sql`${servers.version} + 1`, updatedAt: new Date() })
      .where(eq(servers.id, before.id));
    await recordAudit(tx, actor, {
      clusterId: before.clusterId,
      action: input.enabled ? "server.enable" : "server.disable",
      entityType: "server",
      entityId: before.id,
      summary: `${input.enabled ? "Enabled" : "Disabled"} server ${before.name}`,
      before: { enabled: before.enabled },
      after: { enabled: input.enabled },
    });
    return { id: before.id, clusterId: before.clusterId, enabled: input.enabled };
  });
  return written(result, { kind: "topology", clusterId: result.clusterId }, { kind: "health", clusterId: result.clusterId });
}

/**
 * Deletes a server. While it has inbounds this is refused with the reason, unless
 * `deleteInbounds` confirms deleting them too.
 */
export async function deleteServer(
  db: Db,
  actor: Actor,
  input: { serverId: string; deleteInbounds: boolean },
): Promise<Written<{ clusterId: string; deletedInbounds: number }>> {
  const result = await db.transaction(async (tx) => {
    const server = await lockServer(tx, input.serverId);
    const own = await tx.select().from(inbounds).where(eq(inbounds.serverId, server.id)).orderBy(asc(inbounds.port));
    if (own.length > 0 && !input.deleteInbounds) {
      const names = own.map((i) => i.name);
      throw new TRPCError({
        code: "PRECONDITION_FAILED",
        message: `${server.name} still has ${own.length} inbound${own.length === 1 ? "" : "s"} (${names.slice(0, 5).join(", ")}${names.length > 5 ? ", …" : ""}): delete ${own.length === 1 ? "it" : "them"} first, or confirm deleting ${own.length === 1 ? "it" : "them"} with the server`,
      });
    }
    await tx.delete(servers).where(eq(servers.id, server.id));
    await recordAudit(tx, actor, {
      clusterId: server.clusterId,
      action: "server.delete",
      entityType: "server",
      entityId: server.id,
      summary: `Deleted server ${server.name}${own.length ? ` and its ${own.length} inbound${own.length === 1 ? "" : "s"}` : ""}`,
      before: { ...auditServer(server), inbounds: own.map((i) => ({ name: i.name, port: i.port, routeId: i.routeId })) },
    });
    return { clusterId: server.clusterId, deletedInbounds: own.length };
  });
  return written(result, { kind: "topology", clusterId: result.clusterId });
}

/** A new agent token; the old one stops working at once. Shown once. */
export async function rotateServerToken(db: Db, actor: Actor, input: { serverId: string }): Promise<Written<{ id: string; name: string; agentToken: string }>> {
  const { token, hash } = newAgentToken();
  const result = await db.transaction(async (tx) => {
    const server = await lockServer(tx, input.serverId);
    await tx.update(servers).set({ agentTokenHash: hash, updatedAt: new Date() }).where(eq(servers.id, server.id));
    await recordAudit(tx, actor, {
      clusterId: server.clusterId,
      action: "server.rotate-token",
      entityType: "server",
      entityId: server.id,
      summary: `Rotated the agent token of ${server.name}`,
    });
    return { id: server.id, name: server.name, clusterId: server.clusterId };
  });
  return written({ id: result.id, name: result.name, agentToken: token }, { kind: "topology", clusterId: result.clusterId });
}
