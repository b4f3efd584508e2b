/**
 * The one tRPC router of the app: small routers joined here, one per domain. The tooling
 * router (synthetic clusters, simulated fleets) is mounted only with ROUTEBOARD_DEVTOOLS=1:
 * without it its procedures do not exist, so a call gets 404 like any unknown procedure.
 */
import { apiTokensRouter } from "./routers/apiTokens";
import { alertsRouter } from "./routers/alerts";
import { authRouter } from "./routers/auth";
import { balancerRouter } from "./routers/balancer";
import { clustersRouter } from "./routers/clusters";
import { operatorsRouter } from "./routers/operators";
import { plansRouter } from "./routers/plans";
import { topologyRouter } from "./routers/topology";
import { monitoringRouter } from "./routers/monitoring";
import { auditRouter } from "./routers/audit";
import { inboundsRouter } from "./routers/inbounds";
import { routesRouter } from "./routers/routes";
import { serversRouter } from "./routers/servers";
import { subscribersRouter } from "./routers/subscribers";
import { toolingRouter } from "./routers/tooling";
import { twoFactorRouter } from "./routers/twoFactor";
import { createCallerFactory, createTRPCRouter } from "./trpc";

const productionRouters = {
  apiTokens: apiTokensRouter,
  alerts: alertsRouter,
  audit: auditRouter,
  inbounds: inboundsRouter,
  routes: routesRouter,
  servers: serversRouter,
  subscribers: subscribersRouter,
  auth: authRouter,
  balancer: balancerRouter,
  clusters: clustersRouter,
  operators: operatorsRouter,
  plans: plansRouter,
  topology: topologyRouter,
  monitoring: monitoringRouter,
  twoFactor: twoFactorRouter,
};

/** What a production install serves; the dashboard's client is typed by it. */
export const appRouter = createTRPCRouter(productionRouters);
export type AppRouter = typeof appRouter;

/** The same plus `tooling.*`, for tests, bench, demo and fleet (ROUTEBOARD_DEVTOOLS=1). */
export const devtoolsAppRouter = createTRPCRouter({ ...productionRouters, tooling: toolingRouter });
export type DevtoolsAppRouter = typeof devtoolsAppRouter;

/** The router an instance serves, chosen from its validated environment (server/env.ts). */
export function servedRouter(devtools: boolean): AppRouter | DevtoolsAppRouter {
  return devtools ? devtoolsAppRouter : appRouter;
}

/** Tests call every procedure directly, tooling included. */
export const createCaller = createCallerFactory(devtoolsAppRouter);
