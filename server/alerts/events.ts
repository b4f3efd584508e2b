/**
 * Alert events: their types, when a change is one (pure transition rules), and the readable
 * text a chat shows. No I/O: the outbox (outbox.ts) stores what these rules return.
 *
 * Coalescing: alerts fire on transitions of state that already has its own thresholds (the
 * status machine's unhealthyThreshold, the mesh vote's streaks), never on single probes; a
 * server moving between two down statuses (unavailable → no-data) is not a new outage.
 */
import { DOWN_STATUSES, STATUS_LABELS, type ServerStatus } from "@/core/status";
import type { AnyAlertEventType } from "@/core/alert-events";

export { ALERT_EVENT_LABELS, ALERT_EVENT_TYPES, isAlertEventType, type AlertEventType, type AnyAlertEventType } from "@/core/alert-events";

const isDown = (s: string) => DOWN_STATUSES.has(s as ServerStatus);

/**
 * The event of a server status change, or null. Down: into a down status (no-data,
 * unavailable, probe-failing, unreachable) from one that is not (healthy, pending, disabled);
 * up: from a down status back to healthy. Disabling a down server says nothing; moving
 * between down statuses is the same outage. A server that has never passed a check
 * (`hadSucceeded` false: a new server whose agent is not installed yet, up to and including
 * its first success) is being set up, not failing: no event either way.
 */
export function serverTransitionEvent(from: string, to: string, hadSucceeded = true): "server.down" | "server.up" | null {
  if (from === to || !hadSucceeded) return null;
  if (isDown(to) && !isDown(from)) return "server.down";
  if (to === "healthy" && isDown(from)) return "server.up";
  return null;
}

/** Stored last announced panic state of a route (route_alert_state). */
export interface RoutePanicState {
  inPanic: boolean;
  announced: boolean;
}

/**
 * The next stored state and the event for a route whose panic state is now `inPanic`.
 * A route seen for the first time is a baseline (no event: turning the feature on, or a new
 * cluster whose servers are still pending, is not an outage). Recovered is announced only
 * after an announced panic.
 */
export function routePanicTransition(prev: RoutePanicState | null, inPanic: boolean): { next: RoutePanicState; event: "route.panic" | "route.recovered" | null } {
  if (prev === null) return { next: { inPanic, announced: false }, event: null };
  if (prev.inPanic === inPanic) return { next: prev, event: null };
  if (inPanic) return { next: { inPanic: true, announced: true }, event: "route.panic" };
  return { next: { inPanic: false, announced: false }, event: prev.announced ? "route.recovered" : null };
}

/** One event as sent: the webhook body. */
export interface AlertPayload {
  id: string;
  type: AnyAlertEventType;
  occurredAt: string;
  cluster: { id: string; name: string | null } | null;
  data: Record<string, unknown>;
}

const str = (v: unknown) => (typeof v === "string" ? v : v === null || v === undefined ? "" : String(v));
const named = (v: unknown) => (v && typeof v === "object" && "name" in v ? str((v as { name: unknown }).name) : "");

function bytes(n: unknown): string {
  const v = typeof n === "number" ? n : Number(n);
  if (!Number.isFinite(v)) return "?";
  const units = ["B", "KB", "MB", "GB", "TB", "PB"];
  let x = v;
  let u = 0;
  while (x >= 1024 && u < units.length - 1) {
    x /= 1024;
    u++;
  }
  return `${u === 0 ? x : x.toFixed(x >= 100 ? 0 : 1)} ${units[u]}`;
}

function mbit(bps: unknown): string {
  const v = typeof bps === "number" ? bps : Number(bps);
  return Number.isFinite(v) ? `${(v / 1e6).toFixed(v >= 1e8 ? 0 : 1)} Mbit/s` : "?";
}

/** The readable text of an event (Telegram message). */
export function alertText(p: AlertPayload): string {
  const d = p.data;
  const where = p.cluster?.name ? ` in ${p.cluster.name}` : "";
  const statusLabel = (s: unknown) => STATUS_LABELS[s as ServerStatus] ?? str(s);
  let line: string;
  switch (p.type) {
    case "server.down":
      line = `🔴 Server ${named(d.server)}${where} is down: ${statusLabel(d.to)}.${d.reason ? ` ${str(d.reason)}` : ""}`;
      break;
    case "server.up":
      line = `🟢 Server ${named(d.server)}${where} is back up (was: ${statusLabel(d.from)}).`;
      break;
    case "route.panic":
      line = `🚨 Route ${named(d.route)}${where} is in panic: none of its inbounds is on an available server; users get any inbound of an enabled server.`;
      break;
    case "route.recovered":
      line = `✅ Route ${named(d.route)}${where} recovered: an inbound is available again.`;
      break;
    case "subscriber.limited":
      line = `⛔ Subscriber ${named(d.subscriber)}${where} reached their traffic limit (${bytes(d.usedBytes)} of ${bytes(d.limitBytes)}).`;
      break;
    case "subscriber.expired":
      line = `⌛ Subscriber ${named(d.subscriber)}${where} expired (${str(d.expiresAt)}).`;
      break;
    case "agent.config_rejected":
      line = `⚠️ The agent of ${named(d.server)}${where} rejected its config: ${str(d.error)}`;
      break;
    case "server.report_implausible":
      line =
        d.rateBps !== undefined
          ? `🛑 The agent of ${named(d.server)}${where} reported a rate (${str(d.field)} ${mbit(d.rateBps)}${str(d.field).startsWith("load.") ? ", in a heartbeat" : ""}) above the server's report capacity (${str(d.capacityMbps)} Mbit/s): stored as the capacity. Raise the report capacity if the link is faster.`
          : `🛑 The agent of ${named(d.server)}${where} reported more traffic for one user than the server's report capacity (${str(d.capacityMbps)} Mbit/s) allows (${bytes(d.bytes)}, at most ${bytes(d.boundBytes)}): report refused, nothing counted.`;
      break;
    case "test":
      line = `🔔 Test alert from Routeboard${d.target ? ` to ${named(d.target)}` : ""}: this target works.`;
      break;
    default:
      line = `${str(p.type)}${where}`;
  }
  return `${line}\n${p.occurredAt}`;
}
