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

/** An admin ("ada") and a viewer ("vic") on a test database, as procedure callers. */
export async function adminAndViewer(db: Db) {
  const { createCaller } = await import("./root");
  const { operators } = await import("@/db/schema");
  const [a, v] = await db
    .insert(operators)
    .values([
      { username: "ada", passwordHash: "x", role: "admin" },
      { username: "vic", passwordHash: "x", role: "viewer" },
    ])
    .returning();
  return {
    admin: createCaller(operatorContext(db, a!.id, "ada", "admin")),
    viewer: createCaller(operatorContext(db, v!.id, "vic", "viewer")),
  };
}
