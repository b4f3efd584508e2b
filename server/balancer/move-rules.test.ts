import { describe, expect, it } from "vitest";
import { HELD_BACK_MIN_USERS } from "./capacity";
import { ltMoveVerdict, measuredHeldBack, RATE_MIN_USERS, type LtMoveInput } from "./move-rules";

const M = 1_000_000;

describe("measuredHeldBack (rule 0b)", () => {
  it("is a shortfall beyond two standard errors, or the margin when larger", () => {
    // 40 users: 2 / √40 ≈ 31.6 %.
    expect(measuredHeldBack(2.35 * M, 40, 3 * M, 0.25)).toBe(false);
    expect(measuredHeldBack(2.2 * M, 40, 3 * M, 0.25)).toBe(true);
    // From HELD_BACK_MIN_USERS users on, the margin (25 %) is the larger.
    expect(measuredHeldBack(2.35 * M, HELD_BACK_MIN_USERS * 4, 3 * M, 0.25)).toBe(true);
    expect(measuredHeldBack(2.35 * M, HELD_BACK_MIN_USERS * 4, 3 * M, 0.5)).toBe(false);
  });
  it("measures nothing with too few users, no rate, no reference, or equal rates", () => {
    expect(measuredHeldBack(0, RATE_MIN_USERS - 1, 3 * M, 0.25)).toBe(false);
    expect(measuredHeldBack(0, 0, 3 * M, 0.25)).toBe(false);
    expect(measuredHeldBack(null, 100, 3 * M, 0.25)).toBe(false);
    expect(measuredHeldBack(1 * M, 100, null, 0.25)).toBe(false);
    expect(measuredHeldBack(3 * M, 100, 3 * M, 0)).toBe(false);
  });
});

describe("ltMoveVerdict", () => {
  const input = (over: Partial<LtMoveInput> = {}): LtMoveInput => ({
    cs: 10 * M,
    curShare: 20 * M,
    bs: 30 * M,
    bestShare: 40 * M,
    margin: 0.25,
    hysteresis: 0.25,
    failBack: false,
    headroom: Number.NaN,
    perUser: 2 * M,
    curRate: 2 * M,
    poolRate: () => 3 * M,
    minMoveGainBps: 2 * M,
    failBackHysteresis: 3,
    keepSatisfied: true,
    ...over,
  });

  it("reads the pool's rate at most once, and only when a rule needs it", () => {
    let reads = 0;
    const poolRate = () => (reads++, 3 * M);
    ltMoveVerdict(input({ poolRate, bs: 11 * M })); // no gain: no rule reads it
    expect(reads).toBe(0);
    ltMoveVerdict(input({ poolRate, failBack: true, headroom: 50 * M })); // rules 4 and 3 both need it
    expect(reads).toBe(1);
  });

  it("writes every field of the result it is given, whatever it held", () => {
    const out = ltMoveVerdict(input());
    expect(out).toMatchObject({ move: true, byFree: true, bySh: false, smallerShare: false, satisfied: false, unsaturated: false, want: 0 });
    const again = ltMoveVerdict(input({ headroom: 50 * M }), out);
    expect(again).toBe(out);
    expect(again).toMatchObject({ move: false, unsaturated: true, want: 3 * M });
  });
});
