/** Tests call procedures directly (createCaller) with the context of a signed-in operator. */
import type { Db } from "@/db/client";
import type { OperatorRole } from "@/server/auth/sessions";
import type { Context } from "./trpc";

export function operatorContext(db: Db, operatorId: string, username: string, role: OperatorRole): Context {
  return {
    db,
    operator: { sessionId: `s-${username}`, operatorId, username, role },
    clientAddress: "127.0.0.1",
    userAgent: "vitest",
    secureCookies: false,
    setCookie: () => {},
  };
}
