/**
 * Servers of a cluster. A new server gets an agent token, shown once: the database keeps
 * only its sha256. The agent (agent/, served as one file at /agent/routeboard-agent.mjs) runs as
 *   ROUTEBOARD_URL=<PUBLIC_URL> ROUTEBOARD_AGENT_TOKEN=<token> node routeboard-agent.mjs --core xray
 * (it uses /api/agent/config and /api/agent/report with `Authorization: Bearer <token>`, DESIGN §4).
 */
import { TRPCError } from "@trpc/server";
import { asc, eq, sql } from "drizzle-orm";
import { z } from "zod";
import type { DbOrTx } from "@/db/client";
import { inbounds, routes, serverHealth, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { publishChange } from "@/server/bus";
import { foreignKeyViolation, uniqueViolation } from "@/server/db-errors";
import { inboundView } from "@/server/domain/inbounds";
import { newAgentToken } from "@/server/domain/tokens";
import { addressSchema, capacitySchema, coefficientSchema, idSchema, nameSchema, serverRoleSchema } from "@/core/validation";
import { effectiveStatus } from "@/core/status";
import { createTRPCRouter, protectedProcedure, topologyWriteProcedure } from "../trpc";
import { fieldError } from "./_errors";

const serverFields = {
  name: nameSchema,
  address: addressSchema,
  role: serverRoleSchema.default("node"),
  coefficient: coefficientSchema.default(1),
  capacityMbps: capacitySchema.default(null),
};

function auditServer(s: typeof servers.$inferSelect) {
  return { name: s.name, address: s.address, role: s.role, coefficient: s.coefficient, capacityMbps: s.capacityMbps, enabled: s.enabled };
}

function duplicateName(err: unknown, name: string): unknown {
  const c = uniqueViolation(err);
  if (c === "servers_name_ci" || c === true) return fieldError("CONFLICT", "name", `A server named "${name}" already exists in this cluster`);
  return err;
}

async function lockServer(tx: DbOrTx, serverId: string) {
  const [row] = await tx.select().from(servers).where(eq(servers.id, serverId)).for("update");
  if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "This server no longer exists" });
  return row;
}

export const serversRouter = createTRPCRouter({
  /** Servers with their health and inbounds (and the route each inbound is in). */
  list: protectedProcedure.input(z.object({ clusterId: idSchema })).query(async ({ ctx, input }) => {
    const [serverRows, inboundRows] = await Promise.all([
      ctx.db
        .select({ server: servers, status: serverHealth.status, statusReason: serverHealth.statusReason })
        .from(servers)
        .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
        .where(eq(servers.clusterId, input.clusterId))
        .orderBy(asc(servers.name)),
      ctx.db
        .select({ inbound: inbounds, routeName: routes.name, routeFlag: routes.flag })
        .from(inbounds)
        .leftJoin(routes, eq(routes.id, inbounds.routeId))
        .where(eq(inbounds.clusterId, input.clusterId))
        .orderBy(asc(inbounds.port)),
    ]);
    return serverRows.map(({ server: s, status, statusReason }) => ({
      id: s.id,
      name: s.name,
      address: s.address,
      role: s.role,
      coefficient: s.coefficient,
      capacityMbps: s.capacityMbps,
      enabled: s.enabled,
      // Just re-enabled: the monitor has not re-evaluated it yet.
      status: effectiveStatus(s.enabled, status),
      statusReason: statusReason ?? null,
      createdAt: s.createdAt,
      inbounds: inboundRows.filter((r) => r.inbound.serverId === s.id).map((r) => ({ ...inboundView(r.inbound), routeName: r.routeName, routeFlag: r.routeFlag })),
    }));
  }),

  /** Adds a server; the answer carries its agent token, which is never shown again. */
  create: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, ...serverFields, enabled: z.boolean().default(true) }))
    .mutation(async ({ ctx, input }) => {
      const { token, hash } = newAgentToken();
      try {
        const server = await ctx.db.transaction(async (tx) => {
          const [s] = await tx
            .insert(servers)
            .values({
              clusterId: input.clusterId,
              name: input.name,
              address: input.address,
              role: input.role,
              coefficient: input.coefficient,
              capacityMbps: input.capacityMbps,
              enabled: input.enabled,
              agentTokenHash: hash,
            })
            .returning();
          await tx.insert(serverHealth).values({ serverId: s!.id, status: "pending" });
          await recordAudit(tx, ctx.operator, {
            clusterId: input.clusterId,
            action: "server.create",
            entityType: "server",
            entityId: s!.id,
            summary: `Added server ${s!.name} (${s!.address})`,
            after: auditServer(s!),
          });
          return s!;
        });
        publishChange("topology", input.clusterId);
        return { id: server.id, name: server.name, agentToken: token };
      } catch (err) {
        if (foreignKeyViolation(err)) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
        throw duplicateName(err, input.name);
      }
    }),

  update: topologyWriteProcedure.input(z.object({ serverId: idSchema, ...serverFields, enabled: z.boolean().optional() })).mutation(async ({ ctx, input }) => {
    try {
      const result = await ctx.db.transaction(async (tx) => {
        const before = await lockServer(tx, input.serverId);
        const [after] = await tx
          .update(servers)
          .set({
            name: input.name,
            address: input.address,
            role: input.role,
            coefficient: input.coefficient,
            capacityMbps: input.capacityMbps,
            enabled: input.enabled ?? before.enabled,
            version: sql`${servers.version} + 1`,
            updatedAt: new Date(),
          })
          .where(eq(servers.id, input.serverId))
          .returning();
        await recordAudit(tx, ctx.operator, {
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
      publishChange("topology", result.clusterId);
      return result;
    } catch (err) {
      throw duplicateName(err, input.name);
    }
  }),

  setEnabled: topologyWriteProcedure.input(z.object({ serverId: idSchema, enabled: z.boolean() })).mutation(async ({ ctx, input }) => {
    const result = await ctx.db.transaction(async (tx) => {
      const before = await lockServer(tx, input.serverId);
      await tx
        .update(servers)
        .set({ enabled: input.enabled, version: sql`${servers.version} + 1`, updatedAt: new Date() })
        .where(eq(servers.id, before.id));
      await recordAudit(tx, ctx.operator, {
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
    publishChange("topology", result.clusterId);
    publishChange("health", result.clusterId);
    return result;
  }),

  /**
   * Deletes a server. While it has inbounds this is refused with the reason, unless
   * `deleteInbounds` confirms deleting them too.
   */
  delete: topologyWriteProcedure.input(z.object({ serverId: idSchema, deleteInbounds: z.boolean().default(false) })).mutation(async ({ ctx, input }) => {
    const result = await ctx.db.transaction(async (tx) => {
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
      await recordAudit(tx, ctx.operator, {
        clusterId: server.clusterId,
        action: "server.delete",
        entityType: "server",
        entityId: server.id,
        summary: `Deleted server ${server.name}${own.length ? ` and its ${own.length} inbound${own.length === 1 ? "" : "s"}` : ""}`,
        before: { ...auditServer(server), inbounds: own.map((i) => ({ name: i.name, port: i.port, routeId: i.routeId })) },
      });
      return { clusterId: server.clusterId, deletedInbounds: own.length };
    });
    publishChange("topology", result.clusterId);
    return result;
  }),

  /** A new agent token; the old one stops working at once. Shown once. */
  rotateToken: topologyWriteProcedure.input(z.object({ serverId: idSchema })).mutation(async ({ ctx, input }) => {
    const { token, hash } = newAgentToken();
    const result = await ctx.db.transaction(async (tx) => {
      const server = await lockServer(tx, input.serverId);
      await tx.update(servers).set({ agentTokenHash: hash, updatedAt: new Date() }).where(eq(servers.id, server.id));
      await recordAudit(tx, ctx.operator, {
        clusterId: server.clusterId,
        action: "server.rotate-token",
        entityType: "server",
        entityId: server.id,
        summary: `Rotated the agent token of ${server.name}`,
      });
      return { id: server.id, name: server.name, clusterId: server.clusterId };
    });
    publishChange("topology", result.clusterId);
    return { id: result.id, name: result.name, agentToken: token };
  }),
});
