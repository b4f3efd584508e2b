import { describe, expect, it } from "vitest";
import { isDatabaseDown, isTransactionConflict } from "./db-errors";

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
