/**
 * Health of the servers (DESIGN §3) for the dashboard, and the probe configuration. The
 * fleet helpers of `npm run fleet` / `npm run demo` live in the tooling router (tooling.ts).
 */
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { clusterHealth, probeSettings, setProbeConfig, setReportInterval, setServerProbeOverride } from "@/server/monitoring/cluster-health";
import { DEFAULT_HISTORY_RANGE, historyRangeSchema, probeConfigSchema, probeOverrideSchema } from "@/core/monitoring-contract";
import { idSchema } from "@/core/validation";
import { clusterHistoryOr404 } from "@/server/monitoring/metrics-history";
import { clusterUsageByServer, discardReportedUsage } from "@/server/usage/reported-usage";
import { ownerProcedure, topologyWriteProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

/** A UTC day, YYYY-MM-DD, that exists in the calendar. */
const daySchema = (field: string) =>
  z
    .string({ error: `${field} must be a day, YYYY-MM-DD` })
    .regex(/^\d{4}-\d{2}-\d{2}$/, `${field} must be a day, YYYY-MM-DD`)
    .refine((d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().slice(0, 10) === d, `${field} is not a day of the calendar`)
    .refine((d) => d >= "2000-01-01" && d <= "9999-12-31", `${field} must be between 2000-01-01 and 9999-12-31`);

/** [from, to) in UTC days: from before to, at most 400 days. */
const periodSchema = {
  from: daySchema("from"),
  to: daySchema("to"),
};
const refinePeriod = (v: { from: string; to: string }, ctx: z.RefinementCtx) => {
  const days = (Date.parse(`${v.to}T00:00:00Z`) - Date.parse(`${v.from}T00:00:00Z`)) / 86_400_000;
  if (!(days >= 1)) ctx.addIssue({ code: "custom", path: ["to"], message: "to must be after from (the period is [from, to), in UTC days)" });
  else if (days > 400) ctx.addIssue({ code: "custom", path: ["to"], message: "a period spans at most 400 days" });
};

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
  history: protectedProcedure
    .input(z.object({ clusterId: idSchema, range: historyRangeSchema.default(DEFAULT_HISTORY_RANGE) }))
    .query(({ ctx, input }) => clusterHistoryOr404(ctx.db, input.clusterId, input.range)),

  getProbeConfig: protectedProcedure
    .input(z.object({ clusterId: idSchema }))
    .query(({ ctx, input }) => probeSettings(ctx.db, input.clusterId, ctx.operator.role)),

  setProbeConfig: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, config: probeConfigSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setProbeConfig(ctx.db, ctx.operator, input, { viaApiToken: !!ctx.apiToken }))),

  setServerProbeOverride: topologyWriteProcedure
    .input(z.object({ serverId: idSchema, override: probeOverrideSchema.nullable() }))
    .mutation(({ ctx, input }) => publishAfterCommit(setServerProbeOverride(ctx.db, ctx.operator, input, { viaApiToken: !!ctx.apiToken }))),

  /** What each server of the cluster reported over the UTC days [from, to): bytes and subscribers. */
  usageByServer: protectedProcedure
    .input(z.object({ clusterId: idSchema, ...periodSchema }).superRefine(refinePeriod))
    .query(({ ctx, input }) => clusterUsageByServer(ctx.db, input)),

  /**
   * Owner only (issue 21): discards what one server reported over [from, to) for the cluster's
   * subscribers (or only `subscriberIds`), gives that usage back, and re-enables those it brings
   * under their limit. Audited.
   */
  discardReportedUsage: ownerProcedure
    .input(
      z
        .object({ clusterId: idSchema, serverId: idSchema, ...periodSchema, subscriberIds: z.array(idSchema).min(1, "subscriberIds: name at least one, or leave it out for all").max(10_000).optional() })
        .superRefine(refinePeriod),
    )
    .mutation(({ ctx, input }) => publishAfterCommit(discardReportedUsage(ctx.db, ctx.operator, input))),

  setReportInterval: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, seconds: reportIntervalSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setReportInterval(ctx.db, ctx.operator, input))),
});
