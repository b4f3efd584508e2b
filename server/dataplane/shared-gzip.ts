/**
 * One gzip member made of a small head stored as it is and a tail deflated once for every
 * answer that ends with it (RFC 1951 §3.2.4, RFC 1952 §2).
 *
 * A change's delta is the same users for every server of the cluster; only its head (the
 * server's `from` and `version`, 32 random characters each, which deflate cannot shrink)
 * differs. Compressing each answer whole built a compressor per answer: a thousand per change
 * at 18 µs and about 27 KB of short-lived objects each, which kept the garbage collector
 * running on the event loop /api/health and /sub answer on. Here the tail is deflated once per
 * change, and an answer is its head in a stored block followed by those blocks, with the CRC
 * and length of the whole: a few hundred bytes copied, decoded by any gzip reader.
 */
import zlib from "node:zlib";

/** A stored block holds at most this many bytes (LEN is 16 bits). */
export const MAX_STORED_HEAD = 0xffff;

/** The tail's bytes and their deflate blocks, made once and shared by every answer. */
export class DeflatedTail {
  private blocks: Buffer | null = null;
  readonly bytes: Buffer;

  constructor(readonly text: string) {
    this.bytes = Buffer.from(text);
  }

  /** Raw deflate blocks of the tail, the last one final; made on first use. */
  get deflated(): Buffer {
    return (this.blocks ??= zlib.deflateRawSync(this.bytes));
  }
}

/** gzip(head + tail): one member whose head is a stored block and whose tail is `tail`'s shared blocks. */
export function gzipWithSharedTail(head: Buffer, tail: DeflatedTail): Buffer {
  if (head.length > MAX_STORED_HEAD) throw new RangeError(`head: a stored block holds at most ${MAX_STORED_HEAD} bytes, got ${head.length}`);
  const deflated = tail.deflated;
  const out = Buffer.allocUnsafe(10 + 5 + head.length + deflated.length + 8);
  // Member header: ID1 ID2, CM = deflate, no flags, no mtime, no extra flags, OS unknown.
  out.set([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff], 0);
  // Stored block, not final: BFINAL 0, BTYPE 00, padded to the byte; LEN and its complement.
  let at = 10;
  out[at++] = 0;
  out.writeUInt16LE(head.length, at);
  out.writeUInt16LE(~head.length & 0xffff, at + 2);
  at += 4;
  head.copy(out, at);
  at += head.length;
  // The tail's blocks begin on a byte boundary, as the stored block ends on one; the last is final.
  deflated.copy(out, at);
  at += deflated.length;
  out.writeUInt32LE(crc32(tail.bytes, crc32(head, 0)), at);
  out.writeUInt32LE((head.length + tail.bytes.length) >>> 0, at + 4);
  return out;
}

let table: Uint32Array | null = null;

/** CRC-32 as gzip's trailer has it, continuing from `crc`, computed here (zlib's own arrived in Node 20.15). */
export function crc32Computed(data: Uint8Array, crc: number): number {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let c = ~crc >>> 0;
  for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** CRC-32 continuing from `crc`: zlib's from Node 20.15, else crc32Computed (Node ≥ 20.6 is supported). */
export const crc32: (data: Uint8Array, crc: number) => number = typeof zlib.crc32 === "function" ? (data, crc) => zlib.crc32(data, crc) >>> 0 : crc32Computed;
