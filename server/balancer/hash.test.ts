import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RendezvousKey, rendezvousHash, rendezvousHashFrom, rendezvousSeed } from "./hash";

describe("RendezvousKey", () => {
  it("equals rendezvousHashFrom for every seed, before and after it builds its table", () => {
    fc.assert(
      fc.property(fc.oneof(fc.uuid(), fc.string({ maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 8 })), fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), { minLength: 1, maxLength: 200 }), (id, seeds) => {
        const key = new RendezvousKey(id);
        for (const seed of seeds) expect(key.from(seed)).toBe(rendezvousHashFrom(seed, id));
        // Past the table's threshold: the table answers.
        for (let i = 0; i < 70; i++) key.from(i);
        for (const seed of seeds) expect(key.from(seed)).toBe(rendezvousHashFrom(seed, id));
      }),
      { numRuns: 300 },
    );
  });

  it("gives users' seeds the same weights as rendezvousHash, uuid ids and the empty id included", () => {
    for (const id of ["", "5a1c3e2b-1111-4111-8111-111111111111", "inbound-é"]) {
      const key = new RendezvousKey(id);
      for (let u = 0; u < 300; u++) expect(key.from(rendezvousSeed(`user-${u}`))).toBe(rendezvousHash(`user-${u}`, id));
    }
  });
});
