/**
 * Background services of an app instance and the machine-facing HTTP routes they own.
 * Each domain registers here: the subscription endpoint, agent reports, metrics, prober.
 */
import type { RouteHandler } from "@/server/http/util";
import { agentReportHandler } from "@/server/monitoring/agent-route";
import { startMonitoring, stopMonitoring } from "@/server/monitoring/service";

export const machineRoutes: { exact: Record<string, RouteHandler>; prefixes: Array<[string, RouteHandler]> } = {
  exact: { "/api/agent/report": agentReportHandler },
  prefixes: [],
};

export async function startServices(): Promise<void> {
  await startMonitoring();
}

export async function stopServices(): Promise<void> {
  await stopMonitoring();
}
