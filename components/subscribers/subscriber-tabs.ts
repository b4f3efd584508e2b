/** The tabs of a subscriber's page, in order; `?tab=<id>` opens one (the route reads it on the server too). */
export const SUBSCRIBER_TABS = [
  { id: "usage", label: "Usage" },
  { id: "links", label: "Links & QR" },
  { id: "devices", label: "Devices" },
  { id: "edit", label: "Edit" },
  { id: "explain", label: "Explanation" },
] as const;
export type SubscriberTab = (typeof SUBSCRIBER_TABS)[number]["id"];

export function isSubscriberTab(v: string | undefined): v is SubscriberTab {
  return SUBSCRIBER_TABS.some((t) => t.id === v);
}
