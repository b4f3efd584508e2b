/**
 * Health of the servers (DESIGN §3) for the dashboard, and the probe configuration. The
 * fleet helpers of `npm run fleet` / `npm run demo` live in the tooling router (tooling.ts).
 */
import { z } from "zod";
import { publishAfterCommit } from "@/server/domain/changes";
import { clusterHealth, probeSettings, setProbeConfig, setReportInterval, setServerProbeOverride } from "@/server/domain/monitoring";
import { probeConfigSchema, probeOverrideSchema } from "@/core/monitoring-contract";
import { idSchema } from "@/core/validation";
import { clusterHistoryOr404 } from "@/server/domain/metrics-history";
import { topologyWriteProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

const reportIntervalSchema = z
  .number({ error: "Report interval must be a number of seconds" })
  .int("Report interval must be a whole number of seconds")
  .min(1, "Report interval must be between 1 and 3600 seconds")
  .max(3600, "Report interval must be between 1 and 3600 seconds");

export const monitoringRouter = createTRPCRouter({
  /** Everything the health page shows, in one read. */
  health: protectedProcedure
    .input(z.object({ clusterId: idSchema }))
    .query(({ ctx, input }) => clusterHealth(ctx.db, input.clusterId, ctx.operator.role)),

  /** Each server's traffic and users over the last 24 h, ≤ 288 points per server, for the charts. */
  history: protectedProcedure.input(z.object({ clusterId: idSchema })).query(({ ctx, input }) => clusterHistoryOr404(ctx.db, input.clusterId)),

  getProbeConfig: protectedProcedure
    .input(z.object({ clusterId: idSchema }))
    .query(({ ctx, input }) => probeSettings(ctx.db, input.clusterId, ctx.operator.role)),

  setProbeConfig: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, config: probeConfigSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setProbeConfig(ctx.db, ctx.operator, input, { viaApiToken: !!ctx.apiToken }))),

  setServerProbeOverride: topologyWriteProcedure
    .input(z.object({ serverId: idSchema, override: probeOverrideSchema.nullable() }))
    .mutation(({ ctx, input }) => publishAfterCommit(setServerProbeOverride(ctx.db, ctx.operator, input, { viaApiToken: !!ctx.apiToken }))),

  setReportInterval: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, seconds: reportIntervalSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setReportInterval(ctx.db, ctx.operator, input))),
});
