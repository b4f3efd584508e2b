"use client";
/** The "New route" button that opens the route wizard (the wizard lands with issue #4). */
export function NewRouteButton(_props: { clusterId: string }) {
  return null;
}
