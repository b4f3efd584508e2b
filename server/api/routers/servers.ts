/**
 * Servers of a cluster. A new server gets an agent token, shown once: the database keeps
 * only its sha256. The agent (agent/, served as one file at /agent/routeboard-agent.mjs) runs as
 *   ROUTEBOARD_URL=<PUBLIC_URL> ROUTEBOARD_AGENT_TOKEN=<token> node routeboard-agent.mjs --core xray
 * (it uses /api/agent/config and /api/agent/report with `Authorization: Bearer <token>`, DESIGN §4).
 */
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { createServer, deleteServer, listServers, rotateServerToken, setServerEnabled, updateServer } from "@/server/topology/servers";
import { addressSchema, capacitySchema, coefficientSchema, idSchema, nameSchema, reportCapacitySchema, serverRoleSchema } from "@/core/validation";
import { topologyWriteProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

const serverFields = {
  name: nameSchema,
  address: addressSchema,
  role: serverRoleSchema.default("node"),
  coefficient: coefficientSchema.default(1),
  capacityMbps: capacitySchema.default(null),
  /** Bounds what the agent may report per user (issue 21); absent: 10,000 on create, unchanged on update. */
  reportCapacityMbps: reportCapacitySchema.optional(),
};

export const serversRouter = createTRPCRouter({
  /** Servers with their health and inbounds (and the route each inbound is in). */
  list: protectedProcedure.input(z.object({ clusterId: idSchema })).query(({ ctx, input }) => listServers(ctx.db, input.clusterId)),

  /** Adds a server; the answer carries its agent token, which is never shown again. */
  create: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, ...serverFields, enabled: z.boolean().default(true) }))
    .mutation(({ ctx, input }) => publishAfterCommit(createServer(ctx.db, ctx.operator, input))),

  update: topologyWriteProcedure
    .input(z.object({ serverId: idSchema, ...serverFields, enabled: z.boolean().optional() }))
    .mutation(({ ctx, input }) => publishAfterCommit(updateServer(ctx.db, ctx.operator, input))),

  setEnabled: topologyWriteProcedure
    .input(z.object({ serverId: idSchema, enabled: z.boolean() }))
    .mutation(({ ctx, input }) => publishAfterCommit(setServerEnabled(ctx.db, ctx.operator, input))),

  /**
   * Deletes a server. While it has inbounds this is refused with the reason, unless
   * `deleteInbounds` confirms deleting them too.
   */
  delete: topologyWriteProcedure
    .input(z.object({ serverId: idSchema, deleteInbounds: z.boolean().default(false) }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteServer(ctx.db, ctx.operator, input))),

  /** A new agent token; the old one stops working at once. Shown once. */
  rotateToken: topologyWriteProcedure
    .input(z.object({ serverId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(rotateServerToken(ctx.db, ctx.operator, input))),
});
