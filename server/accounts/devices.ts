/**
 * A subscriber's devices (issue 27, point 3): the apps that fetched the subscription with a
 * device id (server/subscription/devices.ts records them). Listed for operators; removing one
 * frees its place under the device limit (its app is counted again as new at its next fetch).
 */
import { TRPCError } from "@trpc/server";
import { and, asc, eq } from "drizzle-orm";
import type { Db } from "@/db/client";
import { subscriberDevices, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { written, type Actor, type Written } from "@/server/changes";
import { deviceLabel } from "@/core/devices";

/** The subscriber's devices, first seen first (the order the limit counts them in). */
export async function listDevices(db: Db, subscriberId: string) {
  const [sub] = await db.select({ deviceLimit: subscribers.deviceLimit }).from(subscribers).where(eq(subscribers.id, subscriberId));
  if (!sub) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
  const rows = await db
    .select()
    .from(subscriberDevices)
    .where(eq(subscriberDevices.subscriberId, subscriberId))
    .orderBy(asc(subscriberDevices.firstSeenAt), asc(subscriberDevices.hwid));
  return {
    deviceLimit: sub.deviceLimit,
    devices: rows.map((d, i) => ({
      id: d.id,
      hwid: d.hwid,
      label: deviceLabel(d),
      os: d.os,
      osVersion: d.osVersion,
      model: d.model,
      userAgent: d.userAgent,
      firstSeenAt: d.firstSeenAt,
      lastSeenAt: d.lastSeenAt,
      // Past a lowered limit the newest devices get the informational entry (core/devices.ts).
      overLimit: sub.deviceLimit !== null && i >= sub.deviceLimit,
    })),
  };
}

/**
 * Removes one device of one subscriber. The device must be that subscriber's: an id of
 * another subscriber's device is "no such device", whoever asks.
 */
export async function removeDevice(db: Db, actor: Actor, input: { subscriberId: string; deviceId: string }): Promise<Written<{ ok: true }>> {
  const clusterId = await db.transaction(async (tx) => {
    const [sub] = await tx.select({ id: subscribers.id, name: subscribers.name, clusterId: subscribers.clusterId }).from(subscribers).where(eq(subscribers.id, input.subscriberId));
    if (!sub) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
    const [gone] = await tx
      .delete(subscriberDevices)
      .where(and(eq(subscriberDevices.id, input.deviceId), eq(subscriberDevices.subscriberId, sub.id)))
      .returning();
    if (!gone) throw new TRPCError({ code: "NOT_FOUND", message: "This device is no longer listed" });
    await recordAudit(tx, actor, {
      clusterId: sub.clusterId,
      action: "subscriber.device.remove",
      entityType: "subscriber",
      entityId: sub.id,
      summary: `Removed device ${deviceLabel(gone)} of ${sub.name}`,
      before: { hwid: gone.hwid, os: gone.os, osVersion: gone.osVersion, model: gone.model, firstSeenAt: gone.firstSeenAt.toISOString(), lastSeenAt: gone.lastSeenAt.toISOString() },
    });
    return sub.clusterId;
  });
  return written({ ok: true as const }, { kind: "subscribers", clusterId, subscriberIds: [input.subscriberId] });
}
