import { describe, expect, it } from "vitest";
import { carryKeyAction } from "./useKeyboardCarry";

describe("carryKeyAction", () => {
  it("moves down and right to the next target, wrapping at the end", () => {
    expect(carryKeyAction("ArrowDown", 0, 3)).toEqual({ kind: "go", index: 1 });
    expect(carryKeyAction("ArrowRight", 2, 3)).toEqual({ kind: "go", index: 0 });
  });
  it("moves up and left to the previous target, wrapping at the start", () => {
    expect(carryKeyAction("ArrowUp", 1, 3)).toEqual({ kind: "go", index: 0 });
    expect(carryKeyAction("ArrowLeft", 0, 3)).toEqual({ kind: "go", index: 2 });
  });
  it("jumps with Home and End", () => {
    expect(carryKeyAction("Home", 2, 3)).toEqual({ kind: "go", index: 0 });
    expect(carryKeyAction("End", 0, 3)).toEqual({ kind: "go", index: 2 });
  });
  it("stays on Unassigned when it is the only target", () => {
    expect(carryKeyAction("ArrowDown", 0, 1)).toEqual({ kind: "go", index: 0 });
    expect(carryKeyAction("ArrowUp", 0, 1)).toEqual({ kind: "go", index: 0 });
  });
  it("drops with Enter or Space", () => {
    expect(carryKeyAction("Enter", 1, 3)).toEqual({ kind: "drop" });
    expect(carryKeyAction(" ", 1, 3)).toEqual({ kind: "drop" });
  });
  it("cancels with Escape (consumed) and Tab (left to move focus)", () => {
    expect(carryKeyAction("Escape", 1, 3)).toEqual({ kind: "cancel", consume: true });
    expect(carryKeyAction("Tab", 1, 3)).toEqual({ kind: "cancel", consume: false });
  });
  it("ignores every other key", () => {
    expect(carryKeyAction("a", 1, 3)).toBeNull();
    expect(carryKeyAction("Shift", 1, 3)).toBeNull();
  });
});
