/**
 * Background services of an app instance and the machine-facing HTTP routes they own.
 * Each domain registers here: the subscription endpoint, agent reports, metrics, prober.
 */
import type { IncomingMessage } from "node:http";
import type { RouteHandler } from "@/server/http/util";
import { agentReportHandler } from "@/server/dataplane/report-http";
import { agentHeartbeatHandler, heartbeatBatcher } from "@/server/dataplane/heartbeat-http";
import { agentConfigHandler } from "@/server/dataplane/config-http";
import { backupHandler } from "@/server/api/backup-http";
import { closeConfigHub } from "@/server/dataplane/config-hub";
import { reportBatcher } from "@/server/dataplane/report-batcher";
import { startMonitoring, stopMonitoring } from "@/server/monitoring/service";
import { getDatabase, getDb } from "@/server/db";
import { PgChangeBus } from "@/server/bus-pg";
import { AdvisoryLeader, PROBER_LOCK_KEY } from "@/server/leader";
import { instanceId } from "@/server/bus";
import { env } from "@/server/env";
import { AlertWorker, alertWorker, setAlertWorker } from "@/server/alerts/worker";
import { checkSubscriberBlocks } from "@/server/usage/block-alerts";
import { legacySubscriptionRoute, metricsHandler, subscriptionHandler } from "@/server/subscription/http";
import { importHandler } from "@/server/api/import-http";
import { SubscriptionService, setSubscriptionService, subscriptionService } from "@/server/subscription/service";
import { UsageResetJob } from "@/server/usage/reset-job";
import { loopbackUrl, startLiveDemo, type LiveDemo } from "@/server/demo/live";
import { logger } from "@/server/logger";

export const machineRoutes: {
  exact: Record<string, RouteHandler>;
  prefixes: Array<[string, RouteHandler]>;
  /** Asked last, before the dashboard: routes that depend on data (imported subscribers' old URLs). */
  dynamic: Array<(req: IncomingMessage, url: URL) => RouteHandler | null | Promise<RouteHandler | null>>;
} = {
  exact: {
    "/metrics": metricsHandler,
    "/api/agent/report": agentReportHandler,
    "/api/agent/config": agentConfigHandler,
    "/api/agent/heartbeat": agentHeartbeatHandler,
    "/api/backup": backupHandler,
    "/api/import": importHandler,
  },
  prefixes: [["/sub/", subscriptionHandler]],
  dynamic: [legacySubscriptionRoute],
};

interface Running {
  bus?: PgChangeBus;
  leader?: AdvisoryLeader;
  resets: UsageResetJob;
  proberActive: () => boolean;
  stopDemo: () => Promise<void>;
}
let running: Running | null = null;

/** Which instance this is and what it runs (shown by /api/health; tests use it). */
export function instanceInfo() {
  return { id: instanceId(), prober: running?.proberActive() ?? false, changeBus: running?.bus ? (running.bus.connected ? "postgres" : "reconnecting") : "in-process" };
}

export async function startServices(): Promise<void> {
  const database = await getDatabase();
  const shared = database.kind === "postgres" && database.url;
  const bus = shared ? new PgChangeBus(database.url!) : undefined;
  await bus?.start();
  const subscriptions = new SubscriptionService(database.db);
  subscriptions.start();
  await subscriptions.refresh();
  setSubscriptionService(subscriptions);
  reportBatcher(getDb).start(database.kind);
  const monitoring = await startMonitoring({ proberByLeaderOnly: !!shared });
  // Scheduled usage resets: on the leader when instances share a database, like the prober.
  const resets = new UsageResetJob(getDb);
  // Alerts are sent by one instance: the lock holder when several share PostgreSQL.
  const startAlerts = () => {
    if (alertWorker()) return;
    const worker = new AlertWorker({
      db: database.db,
      telegramApiUrl: env().ROUTEBOARD_TELEGRAM_API_URL,
      allowPrivate: env().ROUTEBOARD_ALERTS_ALLOW_PRIVATE,
      stateChecks: [checkSubscriberBlocks],
    });
    setAlertWorker(worker);
    worker.start();
  };
  const stopAlerts = async () => {
    const w = alertWorker();
    setAlertWorker(null);
    await w?.stop();
  };
  // The live demo's simulated agents (server/demo/live.ts): one instance runs them, like the prober.
  let demo: Promise<LiveDemo | null> = Promise.resolve(null);
  const startDemo = () => {
    if (!env().ROUTEBOARD_DEMO) return;
    demo = demo.then(
      (current) =>
        current ??
        startLiveDemo({ db: database.db, appUrl: loopbackUrl(env().HOST, env().PORT), log: logger() }).catch((err: unknown) => {
          logger().warn({ err }, "live demo: could not start the simulated agents");
          return null;
        }),
    );
  };
  const stopDemo = async () => {
    const current = await demo;
    demo = Promise.resolve(null);
    await current?.stop();
  };
  let leader: AdvisoryLeader | undefined;
  if (shared) {
    const retryMs = env().ROUTEBOARD_LEADER_RETRY_MS;
    leader = new AdvisoryLeader(
      database.url!,
      PROBER_LOCK_KEY,
      {
        onAcquire: async () => {
          resets.start();
          await monitoring.startProber();
          startAlerts();
          startDemo();
        },
        onLose: async () => {
          await stopDemo();
          await stopAlerts();
          await resets.stop();
          await monitoring.stopProber();
        },
      },
      retryMs,
    );
    leader.start();
  } else {
    resets.start();
    startAlerts();
    startDemo();
  }
  running = { bus, leader, resets, proberActive: () => monitoring.proberRunning, stopDemo };
}

export async function stopServices(): Promise<void> {
  // Open long-polls get their 304 now; reports already queued are written before the database closes.
  closeConfigHub();
  await running?.stopDemo();
  await reportBatcher(getDb).stop().catch(() => {});
  await heartbeatBatcher().flush().catch(() => {});
  await running?.leader?.stop();
  await running?.resets.stop();
  const alerts = alertWorker();
  setAlertWorker(null);
  await alerts?.stop();
  await stopMonitoring();
  await subscriptionService()?.stop();
  setSubscriptionService(undefined);
  await running?.bus?.stop();
  running = null;
}
