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

/**
 * rendezvousHashFrom(seed, id) for a route's inbound ids and many seeds, equal to it bit for
 * bit, in a few operations instead of one multiply per character of the id.
 *
 * Why this is exact: an FNV-1a step is h ← (h ^ c) · P (mod 2³²). For c < 128, h ^ c = h + d
 * with d = ((h & 127) ^ c) − (h & 127), which depends only on the low 7 bits of h; and the
 * low 7 bits of each step depend only on the low 7 bits of the one before. So over a whole
 * id, h_n = h_0 · Pⁿ + D[h_0 & 127], where D is the same for every seed with the same low 7
 * bits: 128 values per id. An id with a character ≥ 128 is hashed the plain way.
 *
 * D is laid out by low bits first, then inbound: one user's weights for all of a route's
 * inbounds sit side by side (a decision reads one or two cache lines, not one per inbound).
 */
export class RouteRendezvous {
  /** How many ids it was made for. */
  readonly n: number;
  private readonly pn: Int32Array;
  private readonly d: Int32Array;
  private readonly ascii: Uint8Array;
  constructor(private readonly ids: readonly string[]) {
    const n = ids.length;
    this.n = n;
    this.pn = new Int32Array(n);
    this.d = new Int32Array(128 * n);
    this.ascii = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const id = ids[i] as string;
      let ascii = 1;
      let pn = 1;
      for (let k = 0; k < id.length; k++) {
        if (id.charCodeAt(k) >= 128) ascii = 0;
        pn = Math.imul(pn, FNV_PRIME);
      }
      this.ascii[i] = ascii;
      if (!ascii) continue;
      this.pn[i] = pn;
      for (let low = 0; low < 128; low++) this.d[low * n + i] = (fnv1aStep(low, id) - Math.imul(low, pn)) | 0;
    }
  }

  /** rendezvousHashFrom(seed, ids[i]). */
  weight(i: number, seed: number): number {
    if (this.ascii[i] === 0) return rendezvousHashFrom(seed, this.ids[i] as string);
    return fmix32((Math.imul(seed, this.pn[i] as number) + (this.d[(seed & 127) * this.n + i] as number)) | 0);
  }
}
