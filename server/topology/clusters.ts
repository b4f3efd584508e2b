/** Clusters: listing with counts, creating, renaming (the demo cluster: server/demo/seed.ts). */
import { TRPCError } from "@trpc/server";
import { asc, count, eq } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { readBranding, type Branding } from "@/core/branding";
import { clusters, inbounds, routes, servers, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { fieldError, uniqueViolation } from "@/server/db-errors";
import { written, type Actor, type Written } from "@/server/changes";
import type { DevicelessFetches } from "@/core/devices";

export async function listClusters(db: Db) {
  const rows = await db.select().from(clusters).orderBy(asc(clusters.createdAt));
  const counts = async (table: typeof servers | typeof inbounds | typeof routes | typeof subscribers) =>
    new Map((await db.select({ clusterId: table.clusterId, n: count() }).from(table).groupBy(table.clusterId)).map((r) => [r.clusterId, r.n]));
  const [s, i, r, u] = await Promise.all([counts(servers), counts(inbounds), counts(routes), counts(subscribers)]);
  return rows.map((c) => ({
    id: c.id,
    name: c.name,
    createdAt: c.createdAt,
    servers: s.get(c.id) ?? 0,
    inbounds: i.get(c.id) ?? 0,
    routes: r.get(c.id) ?? 0,
    subscribers: u.get(c.id) ?? 0,
  }));
}

export async function getCluster(db: Db, clusterId: string) {
  const [cluster] = await db.select().from(clusters).where(eq(clusters.id, clusterId));
  if (!cluster) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
  return {
    id: cluster.id,
    name: cluster.name,
    reportIntervalS: cluster.reportIntervalS,
    allowedPrivateDestinations: cluster.allowedPrivateDestinations,
    devicelessFetches: cluster.devicelessFetches,
    branding: readBranding(cluster.branding),
  };
}

/**
 * Whether subscribers with a device limit are served when their app sends no device id
 * (core/devices.ts). A "settings" change reloads the subscription snapshot's clusters.
 */
export async function setDevicelessFetches(db: Db, actor: Actor, input: { clusterId: string; devicelessFetches: DevicelessFetches }): Promise<Written<{ ok: true }>> {
  await db.transaction(async (tx) => {
    const [before] = await tx.select().from(clusters).where(eq(clusters.id, input.clusterId)).for("update");
    if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    await tx.update(clusters).set({ devicelessFetches: input.devicelessFetches, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
    await recordAudit(tx, actor, {
      clusterId: input.clusterId,
      action: "cluster.devicelessFetches",
      entityType: "cluster",
      entityId: input.clusterId,
      summary:
        input.devicelessFetches === "refuse"
          ? `Refused subscription fetches without a device id in ${before.name} (subscribers with a device limit)`
          : `Allowed subscription fetches without a device id in ${before.name}`,
      before: { devicelessFetches: before.devicelessFetches },
      after: { devicelessFetches: input.devicelessFetches },
    });
  });
  return written({ ok: true as const }, { kind: "settings", clusterId: input.clusterId });
}

/**
 * The subscribers' public page brand (core/branding.ts). The subscription service re-reads it
 * on the "settings" change, so pages and profile-title follow within a second.
 */
export async function setBranding(db: Db, actor: Actor, input: { clusterId: string; branding: Branding }): Promise<Written<{ clusterId: string; branding: Branding }>> {
  await db.transaction(async (tx) => {
    const [before] = await tx.select().from(clusters).where(eq(clusters.id, input.clusterId)).for("update");
    if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    await tx.update(clusters).set({ branding: input.branding, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
    // An uploaded logo is up to 48 KB of base64: the audit keeps that it changed, not the bytes.
    const brief = (b: Branding | null) => (b ? { ...b, logo: b.logo?.startsWith("data:") ? `${b.logo.slice(0, b.logo.indexOf(","))},… (uploaded image)` : b.logo } : null);
    await recordAudit(tx, actor, {
      clusterId: input.clusterId,
      action: "cluster.branding",
      entityType: "cluster",
      entityId: input.clusterId,
      summary: `Set the subscribers' page brand of ${before.name}${input.branding.title ? ` (title "${input.branding.title}")` : ""}`,
      before: { branding: brief(readBranding(before.branding)) },
      after: { branding: brief(input.branding) },
    });
  });
  return written({ clusterId: input.clusterId, branding: input.branding }, { kind: "settings", clusterId: input.clusterId });
}

/**
 * The exact private destinations subscribers may reach through this cluster's servers
 * (core/edge.ts). Agents get a new config: a "settings" change rebuilds it.
 */
export async function setAllowedPrivateDestinations(
  db: Db,
  actor: Actor,
  input: { clusterId: string; destinations: string[] },
): Promise<Written<{ clusterId: string; destinations: string[] }>> {
  await db.transaction(async (tx) => {
    const [before] = await tx.select().from(clusters).where(eq(clusters.id, input.clusterId)).for("update");
    if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    await tx.update(clusters).set({ allowedPrivateDestinations: input.destinations, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
    await recordAudit(tx, actor, {
      clusterId: input.clusterId,
      action: "cluster.allowedPrivateDestinations",
      entityType: "cluster",
      entityId: input.clusterId,
      summary:
        input.destinations.length === 0
          ? `Closed every private destination of ${before.name} to subscribers`
          : `Allowed subscribers of ${before.name} to reach ${input.destinations.join(", ")}`,
      before: { allowedPrivateDestinations: before.allowedPrivateDestinations },
      after: { allowedPrivateDestinations: input.destinations },
    });
  });
  return written({ clusterId: input.clusterId, destinations: input.destinations }, { kind: "settings", clusterId: input.clusterId });
}

/** Runs a cluster write, turning a taken name into CONFLICT. */
export async function namedCluster<T>(name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (uniqueViolation(err)) throw new TRPCError({ code: "CONFLICT", message: `A cluster named "${name}" already exists` });
    throw err;
  }
}

export function createCluster(db: Db, actor: Actor, input: { name: string }): Promise<Written<{ id: string; name: string }>> {
  return namedCluster(input.name, async () => {
    const created = await db.transaction(async (tx) => {
      const [c] = await tx.insert(clusters).values({ name: input.name }).returning();
      await recordAudit(tx, actor, {
        clusterId: c!.id,
        action: "cluster.create",
        entityType: "cluster",
        entityId: c!.id,
        summary: `Created cluster ${c!.name}`,
        after: { name: c!.name },
      });
      return { id: c!.id, name: c!.name };
    });
    return written(created, { kind: "topology", clusterId: created.id });
  });
}

export function renameCluster(db: Db, actor: Actor, input: { clusterId: string; name: string }): Promise<Written<{ id: string; name: string }>> {
  return namedCluster(input.name, async () => {
    await db.transaction(async (tx) => {
      const [before] = await tx.select().from(clusters).where(eq(clusters.id, input.clusterId));
      if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
      await tx.update(clusters).set({ name: input.name, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
      await recordAudit(tx, actor, {
        clusterId: input.clusterId,
        action: "cluster.rename",
        entityType: "cluster",
        entityId: input.clusterId,
        summary: `Renamed cluster ${before.name} to ${input.name}`,
        before: { name: before.name },
        after: { name: input.name },
      });
    });
    return written({ id: input.clusterId, name: input.name }, { kind: "topology", clusterId: input.clusterId });
  });
}

/** What deleting a cluster takes with it, for the confirmation dialog. */
export async function clusterDeletionImpact(db: DbOrTx, clusterId: string) {
  const [cluster] = await db.select({ id: clusters.id, name: clusters.name }).from(clusters).where(eq(clusters.id, clusterId));
  if (!cluster) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
  const n = async (table: typeof servers | typeof inbounds | typeof routes | typeof subscribers) =>
    (await db.select({ n: count() }).from(table).where(eq(table.clusterId, clusterId)))[0]?.n ?? 0;
  // One after the other: `db` may be a transaction, whose client runs one query at a time.
  const s = await n(servers);
  const i = await n(inbounds);
  const r = await n(routes);
  const u = await n(subscribers);
  return { id: cluster.id, name: cluster.name, servers: s, inbounds: i, routes: r, subscribers: u };
}

/**
 * Deletes a cluster with everything in it (servers and their agent tokens, inbounds, routes,
 * subscribers, their usage and assignments: the foreign keys cascade), in one transaction.
 * `confirmName` must be the cluster's name as typed by the operator: checked here too, so a
 * stale dialog or a script with the wrong id cannot delete another cluster. Agents of its
 * servers get 401 from then on; its subscribers' links 404. `alsoInTransaction` lets the
 * caller forget what it keeps about the cluster elsewhere (the live demo's setting) atomically.
 */
export async function deleteCluster(
  db: Db,
  actor: Actor,
  input: { clusterId: string; confirmName: string },
  alsoInTransaction?: (tx: DbOrTx, clusterId: string) => Promise<void>,
): Promise<Written<{ id: string; name: string; servers: number; inbounds: number; routes: number; subscribers: number }>> {
  const deleted = await db.transaction(async (tx) => {
    const [locked] = await tx.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, input.clusterId)).for("update");
    if (!locked) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    const impact = await clusterDeletionImpact(tx, input.clusterId);
    if (input.confirmName.trim() !== impact.name) {
      throw fieldError("BAD_REQUEST", "confirmName", `Type the cluster's name, ${impact.name}, to delete it`);
    }
    await alsoInTransaction?.(tx, impact.id);
    await tx.delete(clusters).where(eq(clusters.id, impact.id));
    // Installation-wide: the cluster's own audit entries go with it, this one stays.
    await recordAudit(tx, actor, {
      clusterId: null,
      action: "cluster.delete",
      entityType: "cluster",
      entityId: impact.id,
      summary: `Deleted cluster ${impact.name} with ${impact.servers} servers, ${impact.inbounds} inbounds, ${impact.routes} routes and ${impact.subscribers} subscribers`,
      before: { name: impact.name, servers: impact.servers, inbounds: impact.inbounds, routes: impact.routes, subscribers: impact.subscribers },
    });
    return impact;
  });
  // "topology" reloads monitoring, the snapshot and agents' configs (and stops a live demo's
  // agents); "subscribers" drops the cluster's subscribers from every cache.
  return written(deleted, { kind: "topology", clusterId: deleted.id }, { kind: "subscribers", clusterId: deleted.id });
}
