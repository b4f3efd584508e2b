"use client";
/** Edit / delete actions of one route box (the editor lands with issue #4). */
export function RouteMenu(_props: { clusterId: string; route: { id: string; name: string; flag: string | null; algorithm: string } }) {
  return null;
}
