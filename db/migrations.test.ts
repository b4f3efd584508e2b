import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS_FOLDER } from "./client";

/**
 * drizzle's migrator runs only migrations stamped later than the last one a database ran, so
 * a migration merged in with an older stamp would be skipped on every existing install.
 */
describe("migration journal", () => {
  const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as { entries: Array<{ idx: number; tag: string; when: number }> };

  it("numbers migrations 0, 1, 2… with strictly increasing stamps", () => {
    journal.entries.forEach((e, i) => {
      expect(e.idx).toBe(i);
      expect(e.tag.startsWith(String(i).padStart(4, "0") + "_")).toBe(true);
      if (i > 0) expect(e.when).toBeGreaterThan(journal.entries[i - 1]!.when);
    });
  });

  it("lists every SQL file and snapshot, and nothing else", () => {
    const sqlFiles = readdirSync(MIGRATIONS_FOLDER).filter((f) => f.endsWith(".sql")).sort();
    expect(sqlFiles).toEqual(journal.entries.map((e) => `${e.tag}.sql`));
    const snapshots = readdirSync(path.join(MIGRATIONS_FOLDER, "meta")).filter((f) => f.endsWith("_snapshot.json")).sort();
    expect(snapshots).toEqual(journal.entries.map((e) => `${e.tag.slice(0, 4)}_snapshot.json`));
  });

  it("chains each snapshot to the one before", () => {
    let prevId: string | null = null;
    for (const e of journal.entries) {
      const snap = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, "meta", `${e.tag.slice(0, 4)}_snapshot.json`), "utf8")) as { id: string; prevId: string };
      if (prevId !== null) expect(snap.prevId).toBe(prevId);
      prevId = snap.id;
    }
  });
});
