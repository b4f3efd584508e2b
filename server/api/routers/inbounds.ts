/** Inbounds on servers: create (first one lands in a default route), edit, delete, fallback. */
import { TRPCError } from "@trpc/server";
import { eq, sql } from "drizzle-orm";
import { z } from "zod";
import { inbounds, routes, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { publishChange } from "@/server/bus";
import { uniqueViolation } from "@/server/db-errors";
import { auditInbound, createInbound, InboundFieldError, inboundView, portInUseMessage } from "@/server/domain/inbounds";
import { generateRealityKeys } from "@/server/domain/reality";
import { idSchema, inboundFieldsSchema } from "@/core/validation";
import type { Context } from "../trpc";
import { createTRPCRouter, topologyWriteProcedure } from "../trpc";
import { domainError, fieldError } from "./_errors";

const inboundFields = inboundFieldsSchema;

async function translate(err: unknown, ctx: Pick<Context, "db">, serverId: string | undefined, port: number): Promise<unknown> {
  const c = uniqueViolation(err);
  if (c === "inbounds_port_per_server" && serverId) {
    return fieldError("CONFLICT", "port", await portInUseMessage(ctx.db, serverId, port));
  }
  if (err instanceof InboundFieldError) return fieldError("BAD_REQUEST", err.field, err.message);
  return domainError(err);
}

export const inboundsRouter = createTRPCRouter({
  create: topologyWriteProcedure.input(z.object({ serverId: idSchema, routeId: idSchema.nullish() }).and(inboundFields)).mutation(async ({ ctx, input }) => {
    try {
      const result = await ctx.db.transaction((tx) => createInbound(tx, ctx.operator, input));
      publishChange("topology", result.server.clusterId);
      return { inbound: result.inbound, defaultRoute: result.defaultRoute };
    } catch (err) {
      throw await translate(err, ctx, input.serverId, input.port);
    }
  }),

  update: topologyWriteProcedure.input(z.object({ inboundId: idSchema }).and(inboundFields)).mutation(async ({ ctx, input }) => {
    let serverId: string | undefined;
    try {
      const result = await ctx.db.transaction(async (tx) => {
        const [before] = await tx.select().from(inbounds).where(eq(inbounds.id, input.inboundId)).for("update");
        if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "This inbound no longer exists" });
        serverId = before.serverId;
        const keys = input.security === "reality" && !before.realityPrivateKey ? generateRealityKeys() : null;
        const shortIds = input.realityShortIds ?? (before.realityShortIds.length > 0 ? before.realityShortIds : keys ? [keys.shortId] : []);
        const [after] = await tx
          .update(inbounds)
          .set({
            name: input.name,
            port: input.port,
            security: input.security,
            sni: input.sni,
            realityDest: input.realityDest,
            realityServerNames: input.realityServerNames,
            realityShortIds: shortIds,
            tlsCertificateFile: input.tlsCertificateFile,
            tlsKeyFile: input.tlsKeyFile,
            ...(keys ? { realityPublicKey: keys.publicKey, realityPrivateKey: keys.privateKey } : {}),
            version: sql`${inbounds.version} + 1`,
            updatedAt: new Date(),
          })
          .where(eq(inbounds.id, before.id))
          .returning();
        await recordAudit(tx, ctx.operator, {
          clusterId: before.clusterId,
          action: "inbound.update",
          entityType: "inbound",
          entityId: before.id,
          summary: before.name === after!.name ? `Edited inbound ${after!.name}` : `Edited inbound ${before.name} (now ${after!.name})`,
          before: auditInbound(inboundView(before)),
          after: auditInbound(inboundView(after!)),
        });
        return inboundView(after!);
      });
      publishChange("topology", result.clusterId);
      return result;
    } catch (err) {
      throw await translate(err, ctx, serverId, input.port);
    }
  }),

  delete: topologyWriteProcedure.input(z.object({ inboundId: idSchema })).mutation(async ({ ctx, input }) => {
    const result = await ctx.db.transaction(async (tx) => {
      const [row] = await tx
        .select({ inbound: inbounds, server: servers.name, route: routes.name })
        .from(inbounds)
        .innerJoin(servers, eq(servers.id, inbounds.serverId))
        .leftJoin(routes, eq(routes.id, inbounds.routeId))
        .where(eq(inbounds.id, input.inboundId))
        .for("update", { of: inbounds });
      if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "This inbound no longer exists" });
      await tx.delete(inbounds).where(eq(inbounds.id, row.inbound.id));
      await recordAudit(tx, ctx.operator, {
        clusterId: row.inbound.clusterId,
        action: "inbound.delete",
        entityType: "inbound",
        entityId: row.inbound.id,
        summary: `Deleted inbound ${row.inbound.name} (${row.server}:${row.inbound.port})${row.route ? ` from route ${row.route}` : ""}`,
        before: auditInbound(inboundView(row.inbound)),
      });
      return { clusterId: row.inbound.clusterId };
    });
    publishChange("topology", result.clusterId);
    return { ok: true };
  }),

  /** Marks (or unmarks) the inbound as its route's fallback; one fallback per route. */
  setFallback: topologyWriteProcedure.input(z.object({ inboundId: idSchema, isFallback: z.boolean() })).mutation(async ({ ctx, input }) => {
    let routeInfo: { id: string; name: string } | null = null;
    try {
      const result = await ctx.db.transaction(async (tx) => {
        const [before] = await tx.select().from(inbounds).where(eq(inbounds.id, input.inboundId)).for("update");
        if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "This inbound no longer exists" });
        if (input.isFallback && !before.routeId) {
          throw new TRPCError({ code: "BAD_REQUEST", message: `${before.name} is not in a route: put it in a route before marking it as the fallback` });
        }
        if (before.routeId) {
          const [r] = await tx.select({ id: routes.id, name: routes.name }).from(routes).where(eq(routes.id, before.routeId));
          routeInfo = r ?? null;
        }
        if (before.isFallback === input.isFallback) return inboundView(before);
        const [after] = await tx
          .update(inbounds)
          .set({ isFallback: input.isFallback, version: sql`${inbounds.version} + 1`, updatedAt: new Date() })
          .where(eq(inbounds.id, before.id))
          .returning();
        await recordAudit(tx, ctx.operator, {
          clusterId: before.clusterId,
          action: input.isFallback ? "inbound.fallback.set" : "inbound.fallback.clear",
          entityType: "inbound",
          entityId: before.id,
          summary: input.isFallback
            ? `Marked ${before.name} as the fallback of ${routeInfo?.name ?? "its route"}`
            : `${before.name} is no longer the fallback of ${routeInfo?.name ?? "its route"}`,
          before: { isFallback: before.isFallback },
          after: { isFallback: input.isFallback },
        });
        return inboundView(after!);
      });
      publishChange("topology", result.clusterId);
      return result;
    } catch (err) {
      if (uniqueViolation(err) === "inbounds_one_fallback_per_route") {
        const info = routeInfo as { id: string; name: string } | null;
        const [current] = info
          ? await ctx.db
              .select({ name: inbounds.name })
              .from(inbounds)
              .where(sql`${inbounds.routeId} = ${info.id} and ${inbounds.isFallback}`)
          : [];
        throw new TRPCError({
          code: "CONFLICT",
          message: `Route ${info?.name ?? ""} already has a fallback${current ? ` (${current.name})` : ""}: a route can have only one. Unmark it first.`,
        });
      }
      throw domainError(err);
    }
  }),
});
