/**
 * Background services of an app instance and the machine-facing HTTP routes they own.
 * Each domain registers here: the subscription endpoint, agent reports, metrics, prober.
 */
import type { RouteHandler } from "@/server/http/util";
import { agentReportHandler } from "@/server/monitoring/agent-route";
import { startMonitoring, stopMonitoring } from "@/server/monitoring/service";
import { getDb } from "@/db/client";
import { metricsHandler, subscriptionHandler } from "@/server/subscription/http";
import { SubscriptionService, setSubscriptionService, subscriptionService } from "@/server/subscription/service";

export const machineRoutes: { exact: Record<string, RouteHandler>; prefixes: Array<[string, RouteHandler]> } = {
  exact: { "/metrics": metricsHandler, "/api/agent/report": agentReportHandler },
  prefixes: [["/sub/", subscriptionHandler]],
};

export async function startServices(): Promise<void> {
  const subscriptions = new SubscriptionService(await getDb());
  subscriptions.start();
  await subscriptions.refresh();
  setSubscriptionService(subscriptions);
  await startMonitoring();
}

export async function stopServices(): Promise<void> {
  await stopMonitoring();
  await subscriptionService()?.stop();
  setSubscriptionService(undefined);
}
