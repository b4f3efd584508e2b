/**
 * Answering GET /sub/<token>: decide each non-empty route with the balancer from the snapshot
 * (snapshot-cache.ts) and the subscriber's stored choices (server/assignments), then render
 * the format asked for. Decisions and renderings are cached per subscriber.
 *
 * A cached answer is reused under load changes (metrics only move scores) for up to
 * ANSWER_TTL_MS, and for as long as nothing at all changed (the same inputs give the same
 * choice). A topology change decides every route again.
 *
 * A status change keeps a cached answer's decisions and, at its next fetch, re-decides only
 * the routes whose answer depends on a changed server: the server it names, or — for a route
 * in fallback, panic or with no inbound — any server of the route. A server going down thus
 * re-decides only the routes of the users it served, and it is never named again after the
 * reload that saw it down. A server coming back in a route that still has candidates only
 * moves scores (a better candidate appeared), like a load report: such answers pick it up
 * within ANSWER_TTL_MS.
 */
import type { Balancer, Decision, DecisionReason, RouteInput } from "@/server/balancer";
import { counter } from "@/server/metrics";
import { blockReason } from "@/server/usage/access";
import type { Choices, StoredChoices } from "@/server/assignments/stored-choices";
import type { DeviceHeaders } from "@/core/devices";
import { NO_DEVICE, type DeviceGate } from "./devices";
import {
  blockMessage,
  CONTENT_TYPES,
  deviceRefusalMessage,
  INFO_UUID,
  infoEntry,
  lineNameOf,
  parseFormat,
  profileTitle,
  renderSubscription,
  subscriptionUserinfo,
  type SubscriptionEntry,
  type SubscriptionFormat,
  shareLink,
} from "./formats";
import { DEFAULT_BRAND_TITLE } from "@/core/branding";
import { renderSubscriberPage, subscriberPageCsp } from "./page";
import { pageBlockMessage, pageDeviceRefusal, pickPageLanguage, type PageLanguage } from "./page-language";
import { formatForUserAgent, type DetectedFormat } from "./user-agent";
import { subscriptionUrl } from "@/lib/subscription-links";
import { entryFor, planOf, routesOfPlan, type FleetSnapshot, type SnapshotPlan, type SnapshotSubscriber } from "./snapshot";
import type { SnapshotCache } from "./snapshot-cache";

export const ANSWER_TTL_MS = 30_000;

/** The one entry of a subscriber whose plan gives no route with a server (issue 27 point 2). */
export const EMPTY_PLAN_MESSAGE = "ℹ️ Your plan includes no servers yet — contact your provider";
export const PROFILE_UPDATE_INTERVAL_HOURS = 12;

/** What the request says besides the token and ?format. */
export interface AnswerContext {
  /** Picks the format when there is no ?format (user-agent.ts). */
  userAgent?: string | null;
  /** Where the subscription lives (PUBLIC_URL, else the request's Host): the HTML page's links. */
  origin?: string;
  /** The device the app says it is (x-hwid and co., cleaned: core/devices.ts); none when absent. */
  device?: DeviceHeaders;
  /** The browser's Accept-Language: the HTML page's own words follow it. */
  acceptLanguage?: string | null;
}

export type AnswerFormat = SubscriptionFormat | "html";

const HTML_CONTENT_TYPE = "text/html; charset=utf-8";

export interface SubscriptionAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body is ASCII only (share links in base64): its Latin-1 bytes are its UTF-8 bytes, written without a UTF-8 pass. */
  ascii?: boolean;
}

/** What a subscriber's app gets right now, route by route, with every candidate's score. */
export interface Explanation {
  subscriber: SnapshotSubscriber;
  routes: Array<{ routeId: string; route: string; flag: string | null; decision: Decision; entry: SubscriptionEntry | null }>;
  /** inboundId → what the operator knows it as. */
  names: Map<string, { inbound: string; server: string }>;
}

/** One non-empty route of a subscriber's answer, as last decided. */
interface RouteSlot {
  route: RouteInput;
  inboundId: string | null;
  serverId: string | null;
  /** Fallback, panic or none: the answer depends on every server of the route, not only the named one. */
  watchAll: boolean;
  entry: SubscriptionEntry | null;
}

/** A subscriber's decided answer: one slot per non-empty route, and its renderings. */
interface Decided {
  /** The plan the routes were chosen by (null: no plans known, every route). */
  planId: string | null;
  topologyVersion: number;
  metricsVersion: number;
  /** When every route was last decided (reused under load changes for ANSWER_TTL_MS). */
  at: number;
  /** Status changes up to this epoch are reflected in the slots. */
  statusEpoch: number;
  slots: RouteSlot[];
  /** Keyed by the chosen format (a detected one too), and for the HTML page by origin as well. */
  bodies: Map<string, { subscribersVersion: number; body: string; headers: Record<string, string> }>;
}

const requests = counter("routeboard_subscription_requests_total", "Subscription requests by outcome");
const decisions = counter("routeboard_balancer_decisions_total", "Balancer decisions by reason");
const recomputed = counter("routeboard_subscription_recomputed_total", "Answers decided again: all routes (full) or only the routes a status change touched (partial)");

/** What the answer depends on besides the URL: the HTML page's words also follow the language. */
function varyOn(format: AnswerFormat): string {
  return format === "html" ? "User-Agent, Accept-Language" : "User-Agent";
}

const NOT_FOUND: SubscriptionAnswer = { status: 404, headers: { "content-type": "text/plain; charset=utf-8" }, body: "Not found\n" };

export class Answerer {
  private readonly decided = new Map<string, Decided>();
  private readonly routesCache = new WeakMap<FleetSnapshot, Map<string, readonly RouteInput[]>>();

  constructor(
    private readonly snapshot: SnapshotCache,
    private readonly choices: StoredChoices,
    private readonly balancer: Balancer,
    private readonly clock: () => number,
    /** The device limit's check; without one (unit tests of the balancing) every device is served. */
    private readonly devices?: DeviceGate,
  ) {}

  /** Decided answers of these subscribers (of everyone when not named) are decided again. */
  forget(subscriberIds: readonly string[] | undefined): void {
    if (!subscriberIds) this.decided.clear();
    else for (const id of subscriberIds) this.decided.delete(id);
  }

  /** Drops the decided answers of subscribers no longer there. */
  keepOnly(subscribersById: ReadonlyMap<string, unknown>): void {
    for (const id of this.decided.keys()) if (!subscribersById.has(id)) this.decided.delete(id);
  }

  /** GET /sub/<token>[?format=...]; without ?format the User-Agent picks (user-agent.ts). */
  async answer(token: string, formatParam: string | null, ctx: AnswerContext = {}): Promise<SubscriptionAnswer> {
    let format: AnswerFormat | null;
    // The answer depends on the User-Agent only when ?format is absent: caches must key on it then.
    const vary = formatParam === null;
    if (vary) format = formatForUserAgent(ctx.userAgent) satisfies DetectedFormat;
    else format = parseFormat(formatParam);
    if (!format) {
      requests.inc({ outcome: "bad_request" });
      return { status: 400, headers: { "content-type": "text/plain; charset=utf-8" }, body: "Unknown format: use json, clash or singbox, or leave it out for share links\n" };
    }
    if (!/^[A-Za-z0-9_-]{8,128}$/.test(token)) {
      requests.inc({ outcome: "not_found" });
      return NOT_FOUND;
    }
    const snapshot = this.snapshot;
    await snapshot.refresh();
    const now = this.clock();
    const sub = snapshot.subscriberByToken(token);
    // Unknown and disabled: the same 404, no hint of which.
    if (!sub || !sub.enabled || !snapshot.topology) {
      requests.inc({ outcome: "not_found" });
      return NOT_FOUND;
    }
    const origin = ctx.origin ?? "http://localhost";
    const lang = format === "html" ? pickPageLanguage(ctx.acceptLanguage) : "en";
    const blocked = blockReason(sub, now);
    if (blocked) {
      // Expired or over the limit: one entry that says so, in every format (no balancing, no assignment).
      requests.inc({ outcome: blocked.kind });
      const message = blockMessage(blocked);
      const entries = [infoEntry(message)];
      const body =
        format === "html" ? await this.renderPage(sub, entries, INFO_UUID, origin, lang, { reason: blocked, message: pageBlockMessage(blocked, lang) }) : renderSubscription(format, INFO_UUID, entries);
      return { status: 200, headers: this.withStale(this.headersFor(sub, format, vary)), body, ascii: format === "base64" };
    }
    const device = ctx.device ?? NO_DEVICE;
    // Without a device id and without a limit nothing is checked, nor read: the hot path stays in memory.
    if (this.devices && (device.hwid !== null || (sub.deviceLimit ?? null) !== null)) {
      const checked = await this.devices.check(sub, snapshot.topology.clusters.get(sub.clusterId)?.devicelessFetches ?? "allow", device);
      if (!checked.allowed) {
        // Like an expired subscriber: one entry that says why, no balancing, no assignment.
        requests.inc({ outcome: checked.reason });
        const entries = [infoEntry(deviceRefusalMessage(checked))];
        const body =
          format === "html"
            ? await this.renderPage(sub, entries, INFO_UUID, origin, lang, { reason: { kind: checked.reason }, message: pageDeviceRefusal(checked, lang) })
            : renderSubscription(format, INFO_UUID, entries);
        // v2rayTun shows its own device-limit notice on this header (as Remnawave sends it).
        const headers = { ...this.headersFor(sub, format, vary), ...(checked.reason === "device-limit" ? { "x-hwid-limit": "true" } : {}) };
        return { status: 200, headers: this.withStale(headers), body, ascii: format === "base64" };
      }
    }
    const plan = planOf(snapshot.topology, sub);
    if (plan && !plan.allRoutes && this.planRoutes(sub.clusterId, plan).length === 0) {
      // A plan with no route that has a server: one entry that says so, rather than an empty
      // (or, for some apps, broken) config. No balancing, no assignment.
      requests.inc({ outcome: "empty_plan" });
      const entries = [infoEntry(EMPTY_PLAN_MESSAGE)];
      const body =
        format === "html" ? await this.renderPage(sub, entries, INFO_UUID, origin, lang, { reason: { kind: "empty-plan" }, message: EMPTY_PLAN_MESSAGE }) : renderSubscription(format, INFO_UUID, entries);
      return { status: 200, headers: this.withStale(this.headersFor(sub, format, vary)), body, ascii: format === "base64" };
    }
    let d = this.decided.get(sub.id);
    if (!d || d.planId !== (plan?.id ?? null) || !this.isCurrent(d, now) || d.statusEpoch !== snapshot.statusEpoch) {
      const previous = this.choices.known(sub.id) ?? (await this.choices.of(sub.id));
      d = this.bringUpToDate(sub, plan, previous, this.clock());
    }
    // The page's links name the origin, its words the language: one cached page per subscriber, for the last asked.
    const key = format === "html" ? `html ${lang} ${origin}` : format;
    const cached = d.bodies.get(key);
    if (cached && cached.subscribersVersion === snapshot.subscribersVersion) {
      requests.inc({ outcome: snapshot.stale ? "stale" : "ok" });
      return { status: 200, headers: this.withStale(vary ? { ...cached.headers, vary: varyOn(format) } : cached.headers), body: cached.body, ascii: format === "base64" };
    }
    const entries: SubscriptionEntry[] = [];
    for (const slot of d.slots) if (slot.entry) entries.push(slot.entry);
    const headers = this.headersFor(sub, format, false);
    let body: string;
    if (format === "html") {
      body = await this.renderPage(sub, entries, sub.vlessUuid, origin, lang, null);
      for (const k of d.bodies.keys()) if (k.startsWith("html ")) d.bodies.delete(k);
    } else {
      body = renderSubscription(format, sub.vlessUuid, entries, sub.trojanPassword ?? null);
    }
    d.bodies.set(key, { subscribersVersion: snapshot.subscribersVersion, body, headers });
    requests.inc({ outcome: snapshot.stale ? "stale" : "ok" });
    return { status: 200, headers: this.withStale(vary ? { ...headers, vary: varyOn(format) } : headers), body, ascii: format === "base64" };
  }

  /**
   * What a subscriber's app gets right now, with every candidate's score and the reason:
   * a dry run that records nothing.
   */
  async explain(subscriberId: string): Promise<Explanation | null> {
    this.snapshot.expectSubscriber(subscriberId);
    await this.snapshot.refresh();
    const sub = this.snapshot.subscriberById(subscriberId);
    const topology = this.snapshot.topology;
    if (!sub || !topology) return null;
    const cluster = topology.clusters.get(sub.clusterId);
    const previous = await this.choices.of(sub.id);
    const now = this.clock();
    // Only the routes of the subscriber's plan, as their app gets them.
    const planRoutes = routesOfPlan(cluster?.routes ?? [], planOf(topology, sub));
    const routes = this.balancer
      .explainForSubscriber({ userId: sub.id, routes: planRoutes, servers: this.snapshot.serverMetrics, previousAssignments: previous, nowMs: now })
      .map(({ routeId, decision }) => ({
        routeId,
        route: cluster?.routes.find((r) => r.routeId === routeId)?.name ?? "",
        flag: topology.routeFlags?.get(routeId) ?? null,
        decision,
        entry: decision.inboundId ? entryFor(topology, routeId, decision.inboundId) : null,
      }));
    const names = new Map<string, { inbound: string; server: string }>();
    for (const r of routes) {
      for (const c of r.decision.candidates) {
        const ib = topology.inbounds.get(c.inboundId);
        names.set(c.inboundId, { inbound: ib?.name ?? c.inboundId, server: topology.servers.get(c.serverId)?.name ?? c.serverId });
      }
    }
    return { subscriber: sub, routes, names };
  }

  private headersFor(sub: SnapshotSubscriber, format: AnswerFormat, vary: boolean): Record<string, string> {
    const branding = this.snapshot.topology!.clusters.get(sub.clusterId)?.branding ?? null;
    return {
      "content-type": format === "html" ? HTML_CONTENT_TYPE : CONTENT_TYPES[format],
      "cache-control": "no-store",
      "subscription-userinfo": subscriptionUserinfo(sub.trafficUpBytes, sub.trafficDownBytes, sub.trafficLimitBytes, sub.expiresAt),
      "profile-update-interval": String(PROFILE_UPDATE_INTERVAL_HOURS),
      // The brand's title, never the internal cluster name (issue 25 point 7).
      "profile-title": profileTitle(branding?.title ?? DEFAULT_BRAND_TITLE),
      ...(format === "html" ? { "content-security-policy": subscriberPageCsp(branding?.logo) } : {}),
      ...(vary ? { vary: varyOn(format) } : {}),
    };
  }

  private renderPage(
    sub: SnapshotSubscriber,
    entries: SubscriptionEntry[],
    uuid: string,
    origin: string,
    lang: PageLanguage,
    blocked: Parameters<typeof renderSubscriberPage>[0]["blocked"],
  ): Promise<string> {
    const branding = this.snapshot.topology!.clusters.get(sub.clusterId)?.branding ?? null;
    return renderSubscriberPage({
      title: branding?.title ?? DEFAULT_BRAND_TITLE,
      subscriberName: branding?.showSubscriberName ? sub.name : null,
      branding,
      lang,
      url: subscriptionUrl(origin, sub.token),
      upBytes: sub.trafficUpBytes,
      downBytes: sub.trafficDownBytes,
      limitBytes: sub.trafficLimitBytes,
      expiresAt: sub.expiresAt,
      blocked,
      links: entries.map((e) => ({ name: lineNameOf(e), link: shareLink(uuid, e, uuid === sub.vlessUuid ? (sub.trojanPassword ?? null) : null) })),
    });
  }

  private withStale(h: Record<string, string>): Record<string, string> {
    return this.snapshot.stale ? { ...h, "x-routeboard-stale": "1" } : h;
  }

  /** Decided with the current topology, and within ANSWER_TTL_MS of the last load change. */
  private isCurrent(d: Decided, now: number): boolean {
    return d.topologyVersion === this.snapshot.topologyVersion && (d.metricsVersion === this.snapshot.metricsVersion || (now - d.at < ANSWER_TTL_MS && now >= d.at));
  }

  /**
   * The subscriber's decided answer, up to date: every route decided again when the topology
   * changed (or loads did, past ANSWER_TTL_MS), else only the routes a status change touched.
   */
  private bringUpToDate(sub: SnapshotSubscriber, plan: SnapshotPlan | null, previous: Choices, now: number): Decided {
    const snapshot = this.snapshot;
    const d = this.decided.get(sub.id);
    if (!d || d.planId !== (plan?.id ?? null) || !this.isCurrent(d, now)) {
      recomputed.inc({ kind: "full" });
      const routes = this.planRoutes(sub.clusterId, plan);
      const fresh: Decided = {
        planId: plan?.id ?? null,
        topologyVersion: snapshot.topologyVersion,
        metricsVersion: snapshot.metricsVersion,
        at: now,
        statusEpoch: snapshot.statusEpoch,
        slots: [],
        bodies: new Map(),
      };
      for (const route of routes) fresh.slots.push({ route, inboundId: null, serverId: null, watchAll: true, entry: null });
      this.decideSlots(sub.id, fresh.slots, routes, previous, now);
      this.decided.set(sub.id, fresh);
      return fresh;
    }
    if (d.statusEpoch === snapshot.statusEpoch) return d;
    const since = d.statusEpoch;
    const touched: RouteSlot[] = [];
    for (const slot of d.slots) {
      if (slot.watchAll ? slot.route.inbounds.some((ib) => snapshot.statusChangedSince(ib.serverId, since)) : snapshot.statusChangedSince(slot.serverId, since)) touched.push(slot);
    }
    d.statusEpoch = snapshot.statusEpoch;
    if (touched.length > 0) {
      recomputed.inc({ kind: "partial" });
      const routes = touched.map((s) => s.route);
      if (this.decideSlots(sub.id, touched, routes, previous, now)) d.bodies.clear();
    }
    return d;
  }

  /**
   * Decides the given routes for one subscriber, fills their slots and queues the choices
   * that changed for storage. True when any slot now names another inbound.
   */
  private decideSlots(subscriberId: string, slots: RouteSlot[], routes: readonly RouteInput[], previous: Choices, now: number): boolean {
    const topology = this.snapshot.topology!;
    const result = this.balancer.decideForSubscriber({
      userId: subscriberId,
      routes,
      servers: this.snapshot.serverMetrics,
      previousAssignments: previous,
      nowMs: now,
      explain: false,
    });
    const byReason = new Map<DecisionReason, number>();
    let moved = false;
    let changed = false;
    for (let i = 0; i < result.length; i++) {
      const { routeId, decision } = result[i]!;
      const slot = slots[i]!;
      byReason.set(decision.reason, (byReason.get(decision.reason) ?? 0) + 1);
      slot.watchAll = decision.reason !== "best" && decision.reason !== "sticky";
      if (slot.inboundId === decision.inboundId && (slot.entry !== null || decision.inboundId === null)) continue;
      moved = true;
      slot.inboundId = decision.inboundId;
      slot.serverId = decision.serverId;
      slot.entry = decision.inboundId ? entryFor(topology, routeId, decision.inboundId) : null;
      if (decision.inboundId && previous.get(routeId) !== decision.inboundId) {
        previous.set(routeId, decision.inboundId);
        changed = true;
      }
    }
    if (changed) this.choices.queueWrite(subscriberId, previous);
    for (const [r, n] of byReason) decisions.inc({ reason: r }, n);
    return moved;
  }

  /**
   * The non-empty routes of a cluster a plan gives, in order: one array per (topology, plan),
   * shared by every full decision of the plan's subscribers.
   */
  private planRoutes(clusterId: string, plan: SnapshotPlan | null): readonly RouteInput[] {
    const topology = this.snapshot.topology!;
    let byPlan = this.routesCache.get(topology);
    if (!byPlan) this.routesCache.set(topology, (byPlan = new Map()));
    const key = `${clusterId} ${plan?.id ?? "*"}`;
    let routes = byPlan.get(key);
    if (!routes) byPlan.set(key, (routes = routesOfPlan(topology.clusters.get(clusterId)?.routes ?? [], plan).filter((r) => r.inbounds.length > 0)));
    return routes;
  }
}
