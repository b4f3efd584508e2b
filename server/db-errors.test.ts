import { describe, expect, it } from "vitest";
import pino from "pino";
import { sql } from "drizzle-orm";
import { TRPCError } from "@trpc/server";
import { alertTargets } from "@/db/schema";
import { openTestDatabase } from "@/db/testing";
import { loggerOptions } from "./logger";
import { isDatabaseDown, isTransactionConflict, loggableError, scrubQueryValues } from "./db-errors";

describe("isTransactionConflict", () => {
  it("recognises a deadlock and a serialization failure, also as the cause of a wrapper", () => {
    expect(isTransactionConflict(Object.assign(new Error("deadlock detected"), { code: "40P01" }))).toBe(true);
    expect(isTransactionConflict(Object.assign(new Error("could not serialize access"), { code: "40001" }))).toBe(true);
    expect(isTransactionConflict(new Error("Failed query", { cause: Object.assign(new Error("deadlock detected"), { code: "40P01" }) }))).toBe(true);
  });

  it("is false for other errors, a connection failure included", () => {
    expect(isTransactionConflict(Object.assign(new Error("duplicate key"), { code: "23505" }))).toBe(false);
    expect(isTransactionConflict(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }))).toBe(false);
    expect(isTransactionConflict(new Error("deadlock detected"))).toBe(false);
    expect(isTransactionConflict(null)).toBe(false);
    expect(isDatabaseDown(Object.assign(new Error("deadlock detected"), { code: "40P01" }))).toBe(false);
  });
});

describe("logged database errors carry no values (issue 21, point 7)", () => {
  const SECRET = "whsec-TOP-SECRET-0123456789";

  /** What one pino line says about `err` with these options. */
  function logged(options: pino.LoggerOptions, err: unknown): string {
    const lines: string[] = [];
    const log = pino(options, { write: (l: string) => lines.push(l) });
    log.error({ err, path: "alerts.create" }, "tRPC procedure failed");
    log.warn({ err: (err as Error).message }, "as a message");
    log.error(err as Error, "as the first argument");
    return lines.join("");
  }

  it("a failing query's parameters, pg's detail and a quoted value stay out of the log; the SQL and the code stay in", async () => {
    const t = await openTestDatabase("pglite");
    try {
      const failures: unknown[] = [];
      // A value PostgreSQL refuses (a NUL byte), a duplicate (detail echoes the key) and a bad uuid.
      await t.db.insert(alertTargets).values({ name: "dup", kind: "webhook", url: "https://x.invalid", secret: "s", events: [] });
      for (const attempt of [
        () => t.db.insert(alertTargets).values({ name: "nul", kind: "webhook", url: "https://x.invalid", secret: `${SECRET}\u0000`, events: [] }),
        () => t.db.insert(alertTargets).values({ name: "dup", kind: "webhook", url: `https://x.invalid/${SECRET}`, secret: SECRET, events: [] }),
        () => t.db.execute(sql`select ${SECRET}::uuid`),
      ]) {
        try {
          await attempt();
          failures.push(new Error("no failure"));
        } catch (err) {
          // As tRPC hands it to onError: wrapped, with the driver's error as cause.
          failures.push(new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: err as Error }));
        }
      }
      for (const err of failures) {
        // pino's own serializer logs them (the leak this guards against)…
        expect(logged({}, err)).toContain(SECRET);
        // …ours does not, and still says what failed.
        const out = logged(loggerOptions("info"), err);
        expect(out).not.toContain(SECRET);
        expect(out).toMatch(/alert_targets|uuid/);
      }
      expect(logged(loggerOptions("info"), failures[0])).toContain('"code":"22021"');
      expect(logged(loggerOptions("info"), failures[1])).toContain('"constraint":"alert_targets_name_ci"');
    } finally {
      await t.dispose();
    }
  });

  it("scrubs drizzle's message text wherever it is copied", () => {
    expect(scrubQueryValues(`Failed query: select $1\nparams: ${SECRET},x`)).toBe("Failed query: select $1\nparams: [not logged]");
    expect(scrubQueryValues(`invalid input syntax for type uuid: "${SECRET}"`, "22P02")).toBe("invalid input syntax for type uuid: [value not logged]");
    const err = loggableError(new Error(`Failed query: select $1\nparams: ${SECRET}`)) as { message: string; stack: string };
    expect(JSON.stringify(err)).not.toContain(SECRET);
    expect(err.stack).toMatch(/^Error: Failed query: select \$1\nparams: \[not logged\]\n\s+at /);
  });
});
