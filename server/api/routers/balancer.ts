import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { subscriptionService } from "@/server/subscription/service";
import { idSchema } from "@/core/validation";
import { createTRPCRouter, protectedProcedure } from "../trpc";

export const balancerRouter = createTRPCRouter({
  /** What a subscriber's app gets right now, route by route, with every candidate's score. */
  explain: protectedProcedure.input(z.object({ subscriberId: idSchema })).query(async ({ input }) => {
    const service = subscriptionService();
    if (!service) throw new TRPCError({ code: "SERVICE_UNAVAILABLE", message: "The balancer is starting up: try again in a moment" });
    const result = await service.explain(input.subscriberId);
    if (!result) throw new TRPCError({ code: "NOT_FOUND", message: "No such subscriber" });
    const { subscriber, routes, names } = result;
    return {
      subscriber: { id: subscriber.id, name: subscriber.name, enabled: subscriber.enabled, expiresAt: subscriber.expiresAt },
      stale: service.stale,
      routes: routes.map((r) => ({
        routeId: r.routeId,
        route: r.route,
        flag: r.flag,
        reason: r.decision.reason,
        explanation: r.decision.explanation,
        chosen: r.entry ? { inboundId: r.entry.inboundId, inbound: r.entry.inbound, server: r.entry.server } : null,
        candidates: r.decision.candidates.map((c) => ({
          ...c,
          name: names.get(c.inboundId)?.inbound ?? c.inboundId,
          serverName: names.get(c.inboundId)?.server ?? c.serverId,
          chosen: c.inboundId === r.decision.inboundId,
        })),
      })),
    };
  }),
});
