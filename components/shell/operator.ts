"use client";
import { useQuery } from "@tanstack/react-query";
import { createContext, useContext } from "react";
import { useTRPC } from "@/lib/trpc";

export interface CurrentOperator {
  username: string;
  role: "owner" | "admin" | "viewer";
}
export const OperatorContext = createContext<CurrentOperator | null>(null);

/** The operator of this page; only rendered inside AppShell, which waits for a session. */
export function useOperator(): CurrentOperator {
  const op = useContext(OperatorContext);
  if (!op) throw new Error("useOperator outside AppShell");
  return op;
}

export function useCanEdit(): boolean {
  return useOperator().role !== "viewer";
}

/**
 * The origin links are made from (subscriptions, the agent's ROUTEBOARD_URL): PUBLIC_URL
 * when the server has one, so a page opened through another name never hands out links
 * to that name; else the address this page was opened at.
 */
export function useDashboardOrigin(): string {
  return useLinkOrigin().origin;
}

/**
 * The origin links are made from, and whether it is PUBLIC_URL (`publicUrlSet`) or only
 * the browser's address, which is wrong for anyone who reaches the panel by another name.
 */
export function useLinkOrigin(): { origin: string; publicUrlSet: boolean; known: boolean } {
  const trpc = useTRPC();
  const status = useQuery(trpc.auth.status.queryOptions());
  const publicUrl = status.data?.publicUrl ?? null;
  return { origin: publicUrl ?? (typeof window === "undefined" ? "" : window.location.origin), publicUrlSet: publicUrl !== null, known: status.data !== undefined };
}
