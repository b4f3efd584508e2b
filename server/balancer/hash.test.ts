import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RouteRendezvous, rendezvousHash, rendezvousHashFrom, rendezvousSeed } from "./hash";

describe("RouteRendezvous", () => {
  it("equals rendezvousHashFrom for every id and seed, non-ASCII ids included", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.uuid(), fc.string({ maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 8 })), { maxLength: 12 }),
        fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), { minLength: 1, maxLength: 50 }),
        (ids, seeds) => {
          const rv = new RouteRendezvous(ids);
          expect(rv.n).toBe(ids.length);
          for (const seed of seeds) for (const [i, id] of ids.entries()) expect(rv.weight(i, seed)).toBe(rendezvousHashFrom(seed, id));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("gives users' seeds the same weights as rendezvousHash, uuid ids and the empty id included", () => {
    const ids = ["", "5a1c3e2b-1111-4111-8111-111111111111", "inbound-é", "r0i1"];
    const rv = new RouteRendezvous(ids);
    for (let u = 0; u < 300; u++) for (const [i, id] of ids.entries()) expect(rv.weight(i, rendezvousSeed(`user-${u}`))).toBe(rendezvousHash(`user-${u}`, id));
  });
});
