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

/** Uses of a RendezvousKey before it builds its table (the table costs about 128 plain hashes). */
const TABLE_AFTER_USES = 64;

/**
 * rendezvousHashFrom(seed, id) for one id and many seeds, equal to it bit for bit, in a few
 * operations instead of one multiply per character of the id.
 *
 * Why this is exact: an FNV-1a step is h ← (h ^ c) · P (mod 2³²). For c < 128, h ^ c = h + d
 * with d = ((h & 127) ^ c) − (h & 127), which depends only on the low 7 bits of h; and the
 * low 7 bits of each step depend only on the low 7 bits of the one before. So over the whole
 * id, h_n = h_0 · Pⁿ + D[h_0 & 127], where D is the same for every seed with the same low 7
 * bits: 128 values per id. An id with a character ≥ 128 is hashed the plain way.
 */
export class RendezvousKey {
  private uses = 0;
  private table: Int32Array | null = null;
  private pn = 0;
  private readonly ascii: boolean;
  constructor(readonly id: string) {
    let ascii = true;
    for (let i = 0; i < id.length; i++) if (id.charCodeAt(i) >= 128) ascii = false;
    this.ascii = ascii;
  }

  from(seed: number): number {
    const t = this.table;
    if (t !== null) return fmix32((Math.imul(seed, this.pn) + (t[seed & 127] as number)) | 0);
    if (this.ascii && ++this.uses >= TABLE_AFTER_USES) this.build();
    return rendezvousHashFrom(seed, this.id);
  }

  private build(): void {
    let pn = 1;
    for (let i = 0; i < this.id.length; i++) pn = Math.imul(pn, FNV_PRIME);
    const t = new Int32Array(128);
    for (let low = 0; low < 128; low++) t[low] = (fnv1aStep(low, this.id) - Math.imul(low, pn)) | 0;
    this.pn = pn;
    this.table = t;
  }
}
