/** API tokens for shops and bots (server/accounts/api-tokens.ts): the owner and admins manage them. */
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { createApiToken, listApiTokens, revokeApiToken } from "@/server/accounts/api-tokens";
import { apiScopesSchema, apiTokenExpirySchema, apiTokenNameSchema } from "@/core/validation";
import { fieldError } from "@/server/db-errors";
import { createTRPCRouter, protectedProcedure } from "../trpc";

/** Owner and admins; never a token (a token that could mint tokens would outlive its revocation). */
const tokenManagerProcedure = protectedProcedure.meta({ scope: "owner" }).use(({ ctx, next }) => {
  if (ctx.apiToken) throw new TRPCError({ code: "FORBIDDEN", message: "Owner only: API tokens cannot manage API tokens" });
  if (ctx.operator.role === "viewer") throw new TRPCError({ code: "FORBIDDEN", message: "Only the owner and admins manage API tokens" });
  return next({ ctx });
});

const tokenIdSchema = z.string({ error: "Token id is required" }).regex(/^[0-9a-f]{16}$/, "Not a valid token id");

export const apiTokensRouter = createTRPCRouter({
  list: tokenManagerProcedure.query(({ ctx }) => listApiTokens(ctx.db)),

  /** The answer's `token` is the secret: shown once, never stored or retrievable again. */
  create: tokenManagerProcedure
    .input(z.object({ name: apiTokenNameSchema, scopes: apiScopesSchema, expiresAt: apiTokenExpirySchema }))
    .mutation(({ ctx, input }) => {
      // A backup holds every secret of the install (password hashes, second factors, the session secret).
      if (input.scopes.includes("backup") && ctx.operator.role !== "owner") throw fieldError("FORBIDDEN", "scopes", "Only the owner can create a token with the backup scope");
      return createApiToken(ctx.db, ctx.operator, input);
    }),

  revoke: tokenManagerProcedure.input(z.object({ tokenId: tokenIdSchema })).mutation(({ ctx, input }) => revokeApiToken(ctx.db, ctx.operator, input.tokenId)),
});
