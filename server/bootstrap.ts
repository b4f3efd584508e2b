import { count, sql, eq } from "drizzle-orm";
import type { Db } from "@/db/client";
import { operators } from "@/db/schema";
import { seedDemoIfEmpty } from "@/server/demo/seed";
import { hashPassword } from "@/server/auth/password";
import { consumeSetupCode, ensureSetupCode, removeSetupCodeFile } from "@/server/auth/setup-code";
import { passwordWeakness } from "@/server/auth/strength";
import type { Env } from "@/server/env";
import { logger } from "@/server/logger";

/** Unattended owner (ADMIN_USERNAME/ADMIN_PASSWORD) and the demo cluster on a new database. */
export async function bootstrap(
  db: Db,
  e: Env,
): Promise<{ ownerCreated: boolean; demoSeeded: boolean; needsSetup: boolean; setupCode: string | null }> {
  let ownerCreated = false;
  if (e.ADMIN_USERNAME && e.ADMIN_PASSWORD) {
    // Accepted as before (scripts and test suites rely on it), but said out loud.
    const weakness = passwordWeakness(e.ADMIN_PASSWORD, [e.ADMIN_USERNAME]);
    if (weakness) logger().warn({ username: e.ADMIN_USERNAME }, `ADMIN_PASSWORD is weak (${weakness}): change it after logging in`);
    const [existing] = await db
      .select()
      .from(operators)
      .where(eq(sql`lower(${operators.username})`, e.ADMIN_USERNAME.toLowerCase()));
    if (!existing) {
      const [{ n } = { n: 0 }] = await db.select({ n: count() }).from(operators);
      // Another instance starting at the same time may create it first: that is fine.
      const created = await db
        .insert(operators)
        .values({ username: e.ADMIN_USERNAME, passwordHash: await hashPassword(e.ADMIN_PASSWORD), role: n === 0 ? "owner" : "admin" })
        .onConflictDoNothing()
        .returning();
      ownerCreated = created.length > 0;
      logger().info({ username: e.ADMIN_USERNAME }, "created operator from ADMIN_USERNAME");
    }
  }
  const demoSeeded = e.ROUTEBOARD_DEMO ? await seedDemoIfEmpty(db) : false;
  if (demoSeeded) logger().info("seeded the demo cluster");
  const [{ n } = { n: 0 }] = await db.select({ n: count() }).from(operators);
  const needsSetup = n === 0;
  let setupCode: string | null = null;
  if (needsSetup) setupCode = await ensureSetupCode(db, e.DATA_DIR);
  else {
    await consumeSetupCode(db);
    removeSetupCodeFile(e.DATA_DIR);
  }
  return { ownerCreated, demoSeeded, needsSetup, setupCode };
}
