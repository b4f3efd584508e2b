import { expect, it } from "vitest";
import { jsonParts } from "./state";

it("jsonParts writes what JSON.stringify does, long arrays in slices", () => {
  const value = { version: "v1", skip: undefined, users: Array.from({ length: 40_001 }, (_, k) => ({ id: `i${k}`, email: `e${k}`, gone: undefined })), nested: { list: [1, undefined, "x"], at: new Date(0) }, none: null };
  const parts = [...jsonParts(value, true)];
  expect(parts.join("")).toBe(`${JSON.stringify(value)}\n`);
  expect(Math.max(...parts.map((p) => p.length))).toBeLessThan(JSON.stringify(value).length / 3);
});
