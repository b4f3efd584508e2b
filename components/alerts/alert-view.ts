/** What the alerts page shows for a target and its deliveries: pure, so it is unit-tested. */
import { ALERT_EVENT_LABELS, type AlertEventType } from "@/core/alert-events";
import { randomHex } from "@/lib/random-hex";

export type TargetState = "ok" | "retrying" | "failing" | "new";

export interface Delivery {
  id: number;
  type: string;
  state: string;
  attempts: number;
  lastError: string | null;
  occurredAt: Date;
  deliveredAt: Date | null;
}

/** One row of alerts.list: secrets come masked by the server. */
export interface Target {
  id: string;
  name: string;
  kind: "webhook" | "telegram";
  clusterId: string | null;
  clusterName: string | null;
  url: string | null;
  secret: string | null;
  botToken: string | null;
  chatId: string | null;
  events: AlertEventType[];
  enabled: boolean;
  state: TargetState;
  lastError: string | null;
  lastFailureAt: Date | null;
  lastDeliveryAt: Date | null;
  pending: number;
  recent: Delivery[];
}

export const STATE_STYLE: Readonly<Record<TargetState, { label: string; cls: string }>> = {
  ok: { label: "ok", cls: "bg-green-100 text-green-800 ring-green-600/20" },
  retrying: { label: "retrying", cls: "bg-amber-50 text-amber-800 ring-amber-600/20" },
  failing: { label: "failing", cls: "bg-red-50 text-red-800 ring-red-600/20" },
  new: { label: "nothing sent yet", cls: "bg-slate-100 text-slate-700 ring-slate-500/20" },
};

/** The events a new target starts with: the fleet's ups and downs. */
export const DEFAULT_EVENTS: readonly AlertEventType[] = ["server.down", "server.up", "route.panic", "route.recovered"];

/** A moment in the viewer's locale, or a dash for never. */
export const when = (d: Date | null): string => (d ? new Date(d).toLocaleString() : "—");

/** A webhook signing secret: 24 random bytes as 48 hex digits. */
export function randomSecret(): string {
  return randomHex(24);
}

/** A delivery's event type as people read it; an unknown type (from a newer server) as is. */
export function eventLabel(type: string): string {
  return ALERT_EVENT_LABELS[type as AlertEventType | "test"] ?? type;
}

/** Where a delivery stands; a pending one that already failed once says why it is retrying. */
export function deliveryText(d: Pick<Delivery, "state" | "lastError" | "deliveredAt">): string {
  if (d.state === "delivered") return `delivered ${when(d.deliveredAt)}`;
  if (d.state === "failed") return `failed: ${d.lastError ?? ""}`;
  return d.lastError ? `retrying: ${d.lastError}` : "pending";
}

/** Where alerts go, which cluster's, and which events, in one line. */
export function targetSummary(t: Pick<Target, "kind" | "url" | "chatId" | "clusterName" | "events">): string {
  return `${t.kind === "webhook" ? (t.url ?? "") : `chat ${t.chatId}`} · ${t.clusterName ?? "all clusters"} · ${t.events.map((e) => ALERT_EVENT_LABELS[e]).join(", ")}`;
}

/** The last error is news only while the target is still failing or retrying; after a success it is history. */
export function showsLastError(t: Pick<Target, "lastError" | "state">): boolean {
  return t.lastError !== null && t.lastError !== "" && (t.state === "failing" || t.state === "retrying");
}
