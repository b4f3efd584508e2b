/** The alert event types and their labels: shared by the server (server/alerts) and the alerts page. */
export const ALERT_EVENT_TYPES = [
  "server.down",
  "server.up",
  "route.panic",
  "route.recovered",
  "subscriber.limited",
  "subscriber.expired",
  "agent.config_rejected",
  "server.report_implausible",
] as const;
export type AlertEventType = (typeof ALERT_EVENT_TYPES)[number];
/** "test" is sent by the Send test button to one target; no target subscribes to it. */
export type AnyAlertEventType = AlertEventType | "test";

export const ALERT_EVENT_LABELS: Readonly<Record<AnyAlertEventType, string>> = Object.freeze({
  "server.down": "Server down",
  "server.up": "Server back up",
  "route.panic": "Route in panic",
  "route.recovered": "Route recovered",
  "subscriber.limited": "Subscriber reached traffic limit",
  "subscriber.expired": "Subscriber expired",
  "agent.config_rejected": "Agent rejected its config",
  "server.report_implausible": "Agent report refused as implausible",
  test: "Test alert",
});

export function isAlertEventType(v: string): v is AlertEventType {
  return (ALERT_EVENT_TYPES as readonly string[]).includes(v);
}
