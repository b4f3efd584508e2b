/** The one tRPC router of the app: small routers joined here, one per domain. */
import { authRouter } from "./routers/auth";
import { balancerRouter } from "./routers/balancer";
import { clustersRouter } from "./routers/clusters";
import { operatorsRouter } from "./routers/operators";
import { topologyRouter } from "./routers/topology";
import { monitoringRouter } from "./routers/monitoring";
import { auditRouter } from "./routers/audit";
import { inboundsRouter } from "./routers/inbounds";
import { routesRouter } from "./routers/routes";
import { serversRouter } from "./routers/servers";
import { subscribersRouter } from "./routers/subscribers";
import { createCallerFactory, createTRPCRouter } from "./trpc";

export const appRouter = createTRPCRouter({
  audit: auditRouter,
  inbounds: inboundsRouter,
  routes: routesRouter,
  servers: serversRouter,
  subscribers: subscribersRouter,
  auth: authRouter,
  balancer: balancerRouter,
  clusters: clustersRouter,
  operators: operatorsRouter,
  topology: topologyRouter,
  monitoring: monitoringRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
