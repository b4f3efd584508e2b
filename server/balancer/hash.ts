/**
 * Fast deterministic 32-bit hashing for rendezvous tie-breaking (no crypto).
 * FNV-1a over UTF-16 code units, finished with murmur3's fmix32 for avalanche.
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnv1aStep(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h;
}

/** murmur3 finaliser: spreads FNV's weak low bits. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function hash32(s: string): number {
  return fmix32(fnv1aStep(FNV_OFFSET, s));
}

/** Rendezvous (highest-random-weight) hash of (userId, inboundId), unsigned 32-bit. */
export function rendezvousHash(userId: string, inboundId: string): number {
  return rendezvousHashFrom(rendezvousSeed(userId), inboundId);
}

/**
 * The user's half of rendezvousHash, hashed once for all of the user's candidates:
 * rendezvousHashFrom(rendezvousSeed(u), i) === rendezvousHash(u, i).
 */
export function rendezvousSeed(userId: string): number {
  const h = fnv1aStep(FNV_OFFSET, userId) ^ 0xff; // separator so ("ab","c") ≠ ("a","bc")
  return Math.imul(h, FNV_PRIME);
}

export function rendezvousHashFrom(seed: number, inboundId: string): number {
  return fmix32(fnv1aStep(seed, inboundId));
}
