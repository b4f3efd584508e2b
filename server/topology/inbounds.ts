/**
 * Creating inbounds. DESIGN §1: when the first inbound of a cluster is created and the
 * cluster has no route, a default route is created and the inbound is put in it, so a
 * fresh install works without any setting.
 */
import { TRPCError } from "@trpc/server";
import { and, count, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import type { Db, DbOrTx } from "@/db/client";
import { clusters, inbounds, routes, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import type { SessionOperator } from "@/server/auth/sessions";
import { fieldError, uniqueViolation } from "@/server/db-errors";
import { written, type Written } from "@/server/changes";
import { NotFoundError } from "@/server/errors";
import { randomBytes } from "node:crypto";
import { generateRealityKeys } from "./reality";
import type { inboundFieldsSchema } from "@/core/validation";
import { INBOUND_DEFAULTS, ss2022KeyBytes, usesPath, type InboundProtocol, type InboundSettings, type InboundTransport, type SsMethod } from "@/core/inbound-protocols";

type Actor = Pick<SessionOperator, "operatorId" | "username"> | null;

export const DEFAULT_ROUTE_NAME = "Default";

export interface NewInbound extends InboundSettings {
  serverId: string;
  name: string;
  port: number;
  /** Put the new inbound straight into this route (of the same cluster); absent/null = unassigned. */
  routeId?: string | null;
}

/** Public view of an inbound: never the Reality private key. */
export function inboundView(i: typeof inbounds.$inferSelect) {
  return {
    id: i.id,
    clusterId: i.clusterId,
    serverId: i.serverId,
    routeId: i.routeId,
    name: i.name,
    port: i.port,
    protocol: i.protocol as InboundProtocol,
    transport: i.transport as InboundTransport,
    path: i.path,
    host: i.host,
    serviceName: i.serviceName,
    ssMethod: i.ssMethod as SsMethod | null,
    security: i.security,
    sni: i.sni,
    realityPublicKey: i.realityPublicKey,
    /** The short id share links carry (the first). */
    realityShortId: i.realityShortIds[0] ?? null,
    realityShortIds: i.realityShortIds,
    realityServerNames: i.realityServerNames,
    realityDest: i.realityDest,
    tlsCertificateFile: i.tlsCertificateFile,
    tlsKeyFile: i.tlsKeyFile,
    isFallback: i.isFallback,
    version: i.version,
  };
}

/**
 * Creates an inbound on a server; call inside a transaction. Returns the inbound and, when
 * one was made, the default route it landed in.
 */
export async function createInbound(tx: DbOrTx, actor: Actor, input: NewInbound) {
  const [server] = await tx.select().from(servers).where(eq(servers.id, input.serverId));
  if (!server) throw new NotFoundError("This server no longer exists");
  // Serialise inbound creation per cluster, so two first inbounds make one default route.
  await tx.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, server.clusterId)).for("update");
  // One after the other: a transaction's client runs one query at a time.
  const [routeCount] = await tx.select({ n: count() }).from(routes).where(eq(routes.clusterId, server.clusterId));
  const [inboundCount] = await tx.select({ n: count() }).from(inbounds).where(eq(inbounds.clusterId, server.clusterId));
  let chosenRoute: { id: string; name: string } | null = null;
  if (input.routeId) {
    const [r] = await tx.select({ id: routes.id, name: routes.name, clusterId: routes.clusterId }).from(routes).where(eq(routes.id, input.routeId));
    if (!r) throw fieldError("BAD_REQUEST", "routeId", "This route no longer exists");
    if (r.clusterId !== server.clusterId) throw fieldError("BAD_REQUEST", "routeId", "The route must be in the same cluster as the server");
    chosenRoute = { id: r.id, name: r.name };
  }
  let defaultRoute: typeof routes.$inferSelect | null = null;
  if (!chosenRoute && (routeCount?.n ?? 0) === 0 && (inboundCount?.n ?? 0) === 0) {
    const [created] = await tx.insert(routes).values({ clusterId: server.clusterId, name: DEFAULT_ROUTE_NAME, position: 0 }).returning();
    defaultRoute = created!;
    await recordAudit(tx, actor, {
      clusterId: server.clusterId,
      action: "route.create",
      entityType: "route",
      entityId: defaultRoute!.id,
      summary: `Created route ${DEFAULT_ROUTE_NAME} automatically for the cluster's first inbound`,
      after: { name: DEFAULT_ROUTE_NAME, flag: null, algorithm: defaultRoute!.algorithm },
    });
  }
  const keys = input.security === "reality" ? generateRealityKeys() : null;
  const [row] = await tx
    .insert(inbounds)
    .values({
      clusterId: server.clusterId,
      serverId: server.id,
      routeId: chosenRoute?.id ?? defaultRoute?.id ?? null,
      name: input.name,
      port: input.port,
      ...protocolColumns(input, null),
      security: input.security,
      sni: input.sni,
      realityPublicKey: keys?.publicKey ?? null,
      realityPrivateKey: keys?.privateKey ?? null,
      realityShortIds: input.realityShortIds ?? (keys ? [keys.shortId] : []),
      realityServerNames: input.realityServerNames ?? [],
      realityDest: input.realityDest ?? null,
      tlsCertificateFile: input.tlsCertificateFile ?? null,
      tlsKeyFile: input.tlsKeyFile ?? null,
    })
    .returning();
  const inbound = inboundView(row!);
  await recordAudit(tx, actor, {
    clusterId: server.clusterId,
    action: "inbound.create",
    entityType: "inbound",
    entityId: inbound.id,
    summary: `Created inbound ${inbound.name} on ${server.name}:${inbound.port}${chosenRoute || defaultRoute ? ` in route ${(chosenRoute ?? defaultRoute)!.name}` : ""}`,
    after: auditInbound(inbound),
  });
  return { inbound, server, defaultRoute: defaultRoute ? { id: defaultRoute.id, name: defaultRoute.name } : null };
}

/**
 * The protocol columns as stored: each field only where its protocol or transport reads it
 * (null elsewhere, so a switch back and forth leaves nothing stale behind), and the SS-2022
 * server key generated once for the cipher's key length (kept while the length stays).
 */
function protocolColumns(input: Pick<NewInbound, "protocol" | "transport" | "path" | "host" | "serviceName" | "ssMethod">, before: { ssServerKey: string | null } | null) {
  const protocol = input.protocol ?? INBOUND_DEFAULTS.protocol;
  const transport = input.transport ?? INBOUND_DEFAULTS.transport;
  const ssMethod = protocol === "shadowsocks" ? (input.ssMethod ?? null) : null;
  const keyBytes = ssMethod ? ss2022KeyBytes(ssMethod) : null;
  const kept = before?.ssServerKey && keyBytes !== null && Buffer.from(before.ssServerKey, "base64").length === keyBytes ? before.ssServerKey : null;
  return {
    protocol,
    transport,
    path: usesPath(transport) ? (input.path ?? null) : null,
    host: usesPath(transport) ? (input.host ?? null) : null,
    serviceName: transport === "grpc" ? (input.serviceName ?? null) : null,
    ssMethod,
    ssServerKey: keyBytes === null ? null : (kept ?? randomBytes(keyBytes).toString("base64")),
  };
}

/** The fields of an inbound worth keeping in the audit log (no keys). */
export function auditInbound(i: ReturnType<typeof inboundView>) {
  return {
    name: i.name,
    serverId: i.serverId,
    routeId: i.routeId,
    port: i.port,
    protocol: i.protocol,
    transport: i.transport,
    ...(i.path !== null ? { path: i.path } : {}),
    ...(i.host !== null ? { host: i.host } : {}),
    ...(i.serviceName !== null ? { serviceName: i.serviceName } : {}),
    ...(i.ssMethod !== null ? { ssMethod: i.ssMethod } : {}),
    security: i.security,
    sni: i.sni,
    isFallback: i.isFallback,
    ...(i.security === "reality" ? { realityDest: i.realityDest, realityServerNames: i.realityServerNames, realityShortIds: i.realityShortIds } : {}),
    ...(i.security === "tls" ? { tlsCertificateFile: i.tlsCertificateFile, tlsKeyFile: i.tlsKeyFile } : {}),
  };
}

/** "Port 443 is already used on us-nyc-1 (by 🇺🇸 New York)". */
export async function portInUseMessage(db: DbOrTx, serverId: string, port: number): Promise<string> {
  const [row] = await db
    .select({ server: servers.name, inbound: inbounds.name })
    .from(inbounds)
    .innerJoin(servers, eq(servers.id, inbounds.serverId))
    .where(and(eq(inbounds.serverId, serverId), eq(inbounds.port, port)));
  const [server] = row ? [row] : await db.select({ server: servers.name }).from(servers).where(eq(servers.id, serverId));
  return `Port ${port} is already used on ${server?.server ?? "this server"}${row ? ` (by ${row.inbound})` : ""}`;
}

/** A write that ran into the per-server port rule says which inbound holds the port, on the port field. */
async function portRule<T>(db: Db, port: number, serverId: () => string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const sid = serverId();
    if (uniqueViolation(err) === "inbounds_port_per_server" && sid) throw fieldError("CONFLICT", "port", await portInUseMessage(db, sid, port));
    throw err;
  }
}

type InboundFields = z.output<typeof inboundFieldsSchema>;

/** createInbound in its own transaction (the inbounds.create procedure). */
export function addInbound(db: Db, actor: Actor, input: NewInbound) {
  return portRule(
    db,
    input.port,
    () => input.serverId,
    async () => {
      const result = await db.transaction((tx) => createInbound(tx, actor, input));
      return written({ inbound: result.inbound, defaultRoute: result.defaultRoute }, { kind: "topology", clusterId: result.server.clusterId });
    },
  );
}

/** Edits an inbound; switching to Reality generates its keys once. */
export function updateInbound(db: Db, actor: Actor, input: InboundFields & { inboundId: string }): Promise<Written<ReturnType<typeof inboundView>>> {
  let serverId: string | undefined;
  return portRule(
    db,
    input.port,
    () => serverId,
    async () => {
      const result = await db.transaction(async (tx) => {
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
            ...protocolColumns(input, before),
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
        await recordAudit(tx, actor, {
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
      return written(result, { kind: "topology", clusterId: result.clusterId });
    },
  );
}

export async function deleteInbound(db: Db, actor: Actor, input: { inboundId: string }): Promise<Written<{ ok: true }>> {
  const result = await db.transaction(async (tx) => {
    const [row] = await tx
      .select({ inbound: inbounds, server: servers.name, route: routes.name })
      .from(inbounds)
      .innerJoin(servers, eq(servers.id, inbounds.serverId))
      .leftJoin(routes, eq(routes.id, inbounds.routeId))
      .where(eq(inbounds.id, input.inboundId))
      .for("update", { of: inbounds });
    if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "This inbound no longer exists" });
    await tx.delete(inbounds).where(eq(inbounds.id, row.inbound.id));
    await recordAudit(tx, actor, {
      clusterId: row.inbound.clusterId,
      action: "inbound.delete",
      entityType: "inbound",
      entityId: row.inbound.id,
      summary: `Deleted inbound ${row.inbound.name} (${row.server}:${row.inbound.port})${row.route ? ` from route ${row.route}` : ""}`,
      before: auditInbound(inboundView(row.inbound)),
    });
    return { clusterId: row.inbound.clusterId };
  });
  return written({ ok: true as const }, { kind: "topology", clusterId: result.clusterId });
}

/** Marks (or unmarks) the inbound as its route's fallback; one fallback per route. */
export async function setInboundFallback(
  db: Db,
  actor: Actor,
  input: { inboundId: string; isFallback: boolean },
): Promise<Written<ReturnType<typeof inboundView>>> {
  let routeInfo: { id: string; name: string } | null = null;
  try {
    const result = await db.transaction(async (tx) => {
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
      await recordAudit(tx, actor, {
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
    return written(result, { kind: "topology", clusterId: result.clusterId });
  } catch (err) {
    if (uniqueViolation(err) === "inbounds_one_fallback_per_route") {
      const info = routeInfo as { id: string; name: string } | null;
      const [current] = info
        ? await db
            .select({ name: inbounds.name })
            .from(inbounds)
            .where(sql`${inbounds.routeId} = ${info.id} and ${inbounds.isFallback}`)
        : [];
      throw new TRPCError({
        code: "CONFLICT",
        message: `Route ${info?.name ?? ""} already has a fallback${current ? ` (${current.name})` : ""}: a route can have only one. Unmark it first.`,
      });
    }
    throw err;
  }
}
