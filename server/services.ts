/**
 * Background services of an app instance and the machine-facing HTTP routes they own.
 * Each domain registers here: the subscription endpoint, agent reports, metrics, prober.
 */
import type { RouteHandler } from "@/server/http/util";

export const machineRoutes: { exact: Record<string, RouteHandler>; prefixes: Array<[string, RouteHandler]> } = {
  exact: {},
  prefixes: [],
};

export async function startServices(): Promise<void> {}

export async function stopServices(): Promise<void> {}
