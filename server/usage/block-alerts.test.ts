import { describe, expect, it } from "vitest";
import { blockReason } from "./access";
import { subscriberBlockTransition, type SubscriberBlockState } from "./block-alerts";

describe("subscriberBlockTransition", () => {
  const DAY = 86_400_000;
  const t0 = Date.UTC(2026, 10, 1);
  const sub = (over: Partial<{ expiresAt: Date | null; trafficLimitBytes: number | null; trafficUsedBytes: number }> = {}) => ({
    expiresAt: null as Date | null,
    trafficLimitBytes: null as number | null,
    trafficUsedBytes: 0,
    ...over,
  });
  /** Runs the rule over successive (subscriber, clock) observations; returns the events. */
  const run = (steps: Array<[ReturnType<typeof sub>, number]>) => {
    let state: SubscriberBlockState | null = null;
    const events: Array<string | null> = [];
    for (const [s, now] of steps) {
      const r = subscriberBlockTransition(state, blockReason(s, now), s.expiresAt?.getTime() ?? null);
      events.push(r.event);
      state = r.next;
    }
    return { events, state };
  };

  it("limited once when usage crosses the limit, again only after a reset brought it under", () => {
    const { events } = run([
      [sub({ trafficLimitBytes: 100, trafficUsedBytes: 50 }), t0],
      [sub({ trafficLimitBytes: 100, trafficUsedBytes: 100 }), t0],
      [sub({ trafficLimitBytes: 100, trafficUsedBytes: 150 }), t0 + 1],
      [sub({ trafficLimitBytes: 100, trafficUsedBytes: 0 }), t0 + 2],
      [sub({ trafficLimitBytes: 100, trafficUsedBytes: 120 }), t0 + 3],
    ]);
    expect(events).toEqual([null, "subscriber.limited", null, null, "subscriber.limited"]);
  });

  it("expired once; a clock going backwards and forwards again does not repeat it", () => {
    const exp = new Date(t0 + DAY);
    const { events, state } = run([
      [sub({ expiresAt: exp }), t0],
      [sub({ expiresAt: exp }), t0 + DAY],
      [sub({ expiresAt: exp }), t0 + DAY - 60_000], // clock stepped back a minute
      [sub({ expiresAt: exp }), t0 + DAY + 1],
      [sub({ expiresAt: exp }), t0 + 2 * DAY],
    ]);
    expect(events).toEqual([null, "subscriber.expired", null, null, null]);
    expect(state).toEqual({ kind: "expired", expiresAtMs: exp.getTime() });
  });

  it("an extended expiry lifts the block; expiring again on the new date is a new event", () => {
    const exp = new Date(t0 + DAY);
    const later = new Date(t0 + 3 * DAY);
    const { events } = run([
      [sub({ expiresAt: exp }), t0 + DAY],
      [sub({ expiresAt: later }), t0 + 2 * DAY],
      [sub({ expiresAt: later }), t0 + 3 * DAY],
    ]);
    expect(events).toEqual(["subscriber.expired", null, "subscriber.expired"]);
  });

  it("limited then expired is two events (a new reason); expired then limited after renewal too", () => {
    const exp = new Date(t0 + DAY);
    const { events } = run([
      [sub({ expiresAt: exp, trafficLimitBytes: 10, trafficUsedBytes: 10 }), t0],
      [sub({ expiresAt: exp, trafficLimitBytes: 10, trafficUsedBytes: 10 }), t0 + DAY],
      [sub({ expiresAt: new Date(t0 + 9 * DAY), trafficLimitBytes: 10, trafficUsedBytes: 10 }), t0 + DAY + 1],
    ]);
    expect(events).toEqual(["subscriber.limited", "subscriber.expired", "subscriber.limited"]);
  });

  it("removing the expiry lifts an expired block", () => {
    const r = subscriberBlockTransition({ kind: "expired", expiresAtMs: t0 }, null, null);
    expect(r).toEqual({ next: null, event: null });
  });
});
