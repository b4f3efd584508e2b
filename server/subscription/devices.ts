/**
 * The device check of GET /sub (issue 27, point 3): the rule is core/devices.ts; this runs it
 * on the subscriber's stored devices and records the device it lets through.
 *
 * A fetch without a device id from a subscriber without a limit never reaches the database
 * (the hot path stays in memory). One with a device id runs one short transaction that holds
 * the subscriber's row, so two new devices fetching at once on two instances cannot both take
 * the last free place.
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { subscriberDevices, subscribers } from "@/db/schema";
import { deviceAccess, type DeviceDecision, type DeviceHeaders, type DevicelessFetches } from "@/core/devices";
import { logger } from "@/server/logger";

export const NO_DEVICE: DeviceHeaders = { hwid: null, os: null, osVersion: null, model: null, userAgent: null };

/** A known device's last-seen time is written at most this often (apps refetch every few hours). */
export const DEVICE_TOUCH_MS = 60_000;

export class DeviceGate {
  /** Logged once per outage, not once per fetch. */
  private warned = false;

  constructor(
    private readonly db: Db,
    private readonly clock: () => number,
  ) {}

  /**
   * Whether this fetch is served. When the database cannot be reached the fetch is served
   * (the subscription keeps answering from its snapshot, as it does for everything else) and
   * nothing is recorded.
   */
  async check(sub: { id: string; deviceLimit?: number | null }, devicelessFetches: DevicelessFetches, device: DeviceHeaders): Promise<DeviceDecision> {
    const limit = sub.deviceLimit ?? null;
    if (device.hwid === null) return deviceAccess({ hwid: null, devices: [], limit, devicelessFetches });
    const hwid = device.hwid;
    try {
      const decision = await this.db.transaction(async (tx): Promise<DeviceDecision> => {
        const [held] = await tx.select({ id: subscribers.id }).from(subscribers).where(eq(subscribers.id, sub.id)).for("update");
        if (!held) return { allowed: true, record: "none" } as const;
        const known = await tx
          .select({ hwid: subscriberDevices.hwid, firstSeenAt: subscriberDevices.firstSeenAt, lastSeenAt: subscriberDevices.lastSeenAt })
          .from(subscriberDevices)
          .where(eq(subscriberDevices.subscriberId, sub.id));
        const decision = deviceAccess({
          hwid,
          devices: known.map((d) => ({ hwid: d.hwid, firstSeenAt: d.firstSeenAt.getTime(), lastSeenAt: d.lastSeenAt.getTime() })),
          limit,
          devicelessFetches,
        });
        if (!decision.allowed || decision.record === "none") return decision;
        const now = new Date(this.clock());
        const described = { os: device.os, osVersion: device.osVersion, model: device.model, userAgent: device.userAgent };
        if (decision.record === "touch") {
          const seen = known.find((d) => d.hwid === hwid)!;
          if (now.getTime() - seen.lastSeenAt.getTime() >= DEVICE_TOUCH_MS) {
            await tx
              .update(subscriberDevices)
              .set({ ...described, lastSeenAt: now })
              .where(and(eq(subscriberDevices.subscriberId, sub.id), eq(subscriberDevices.hwid, hwid)));
          }
          return decision;
        }
        if (decision.evict !== undefined) await tx.delete(subscriberDevices).where(and(eq(subscriberDevices.subscriberId, sub.id), inArray(subscriberDevices.hwid, [decision.evict])));
        await tx
          .insert(subscriberDevices)
          .values({ subscriberId: sub.id, hwid, ...described, firstSeenAt: now, lastSeenAt: now })
          .onConflictDoUpdate({ target: [subscriberDevices.subscriberId, subscriberDevices.hwid], set: { lastSeenAt: sql`excluded.last_seen_at` } });
        return decision;
      });
      this.warned = false;
      return decision;
    } catch (err) {
      if (!this.warned) logger().warn({ err: (err as Error).message }, "device check failed; serving the subscription without it");
      this.warned = true;
      return { allowed: true, record: "none" };
    }
  }
}
