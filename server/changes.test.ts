/** publishAfterCommit: the one place a write's change events leave it, and where domain errors become tRPC errors. */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { TRPCError } from "@trpc/server";
import { onChange, type ChangeEvent } from "@/server/bus";
import { publishAfterCommit, written } from "./changes";
import { NotFoundError, StaleDataError } from "./errors";

describe("publishAfterCommit", () => {
  const events: ChangeEvent[] = [];
  const stop = onChange((e) => events.push(e));
  afterEach(() => {
    events.length = 0;
  });
  afterAll(() => stop());

  it("announces every change of a write, in order, and returns its result", async () => {
    const result = await publishAfterCommit(
      Promise.resolve(written({ id: "x" }, { kind: "topology", clusterId: "c1" }, { kind: "health", clusterId: "c1" }, { kind: "assignments", clusterId: null, subscriberIds: ["s1"] })),
    );
    expect(result).toEqual({ id: "x" });
    expect(events.map((e) => [e.kind, e.clusterId, e.subscriberIds])).toEqual([
      ["topology", "c1", undefined],
      ["health", "c1", undefined],
      ["assignments", null, ["s1"]],
    ]);
  });

  it("a write with no changes announces nothing", async () => {
    expect(await publishAfterCommit(Promise.resolve(written(7)))).toBe(7);
    expect(events).toEqual([]);
  });

  it("a failed write announces nothing; domain errors become NOT_FOUND and CONFLICT with their message", async () => {
    const notFound = await publishAfterCommit(Promise.reject(new NotFoundError("That route no longer exists"))).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(TRPCError);
    expect(notFound).toMatchObject({ code: "NOT_FOUND", message: "That route no longer exists" });
    await expect(publishAfterCommit(Promise.reject(new StaleDataError("stale")))).rejects.toMatchObject({ code: "CONFLICT", message: "stale" });
    const other = new Error("boom");
    await expect(publishAfterCommit(Promise.reject(other))).rejects.toBe(other);
    expect(events).toEqual([]);
  });
});
