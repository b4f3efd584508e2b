/**
 * Creating inbounds. DESIGN §1: when the first inbound of a cluster is created and the
 * cluster has no route, a default route is created and the inbound is put in it, so a
 * fresh install works without any setting.
 */
import { and, count, eq } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { clusters, inbounds, routes, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import type { SessionOperator } from "@/server/auth/sessions";
import { NotFoundError } from "@/server/domain/moves";
import { generateRealityKeys } from "@/server/domain/reality";

type Actor = Pick<SessionOperator, "operatorId" | "username"> | null;

export const DEFAULT_ROUTE_NAME = "Default";

export interface NewInbound {
  serverId: string;
  name: string;
  port: number;
  security: "reality" | "tls" | "none";
  sni: string | null;
  realityDest?: string | null;
  realityServerNames?: string[];
  /** Absent: one is generated for Reality. */
  realityShortIds?: string[];
  tlsCertificateFile?: string | null;
  tlsKeyFile?: string | null;
  /** Put the new inbound straight into this route (of the same cluster); absent/null = unassigned. */
  routeId?: string | null;
}

/** A bad value of one input field, for the router to show next to that field. */
export class InboundFieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
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
    protocol: i.protocol,
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
  const [[routeCount], [inboundCount]] = await Promise.all([
    tx.select({ n: count() }).from(routes).where(eq(routes.clusterId, server.clusterId)),
    tx.select({ n: count() }).from(inbounds).where(eq(inbounds.clusterId, server.clusterId)),
  ]);
  let chosenRoute: { id: string; name: string } | null = null;
  if (input.routeId) {
    const [r] = await tx.select({ id: routes.id, name: routes.name, clusterId: routes.clusterId }).from(routes).where(eq(routes.id, input.routeId));
    if (!r) throw new InboundFieldError("routeId", "This route no longer exists");
    if (r.clusterId !== server.clusterId) throw new InboundFieldError("routeId", "The route must be in the same cluster as the server");
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

/** The fields of an inbound worth keeping in the audit log (no keys). */
export function auditInbound(i: ReturnType<typeof inboundView>) {
  return {
    name: i.name,
    serverId: i.serverId,
    routeId: i.routeId,
    port: i.port,
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
