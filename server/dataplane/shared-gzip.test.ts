/**
 * The gzip member with a stored head and a shared deflated tail (shared-gzip.ts): every gzip
 * reader must decode it to head + tail, whatever their sizes.
 */
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { crc32, crc32Computed, DeflatedTail, gzipWithSharedTail, MAX_STORED_HEAD } from "./shared-gzip";

const uuid = (k: number) => `00000000-0000-4000-8000-${String(k).padStart(12, "0")}`;

describe("gzip with a shared tail", () => {
  const users = (n: number) => `,"usersAdded":[${Array.from({ length: n }, (_, k) => `{"id":"${uuid(k)}","email":"${uuid(k + n)}"}`).join(",")}],"usersRemoved":["${uuid(7)}"]}`;

  it("decodes to head + tail with gunzip, one call or streamed, for small and large tails and an empty head", async () => {
    for (const [head, tailText] of [
      ['{"kind":"delta","from":"AbC_1-x","version":"XyZ-9_q"', users(1)],
      ['{"kind":"delta","from":"a","version":"b"', users(5000)],
      ["", users(3)],
      ["é ✓ 𝄞", "}"],
    ] as const) {
      const tail = new DeflatedTail(tailText);
      const wire = gzipWithSharedTail(Buffer.from(head), tail);
      expect(zlib.gunzipSync(wire).toString("utf8")).toBe(head + tailText);
      const streamed: Buffer[] = [];
      const gunzip = zlib.createGunzip();
      gunzip.on("data", (c: Buffer) => streamed.push(c));
      const ended = new Promise((resolve) => gunzip.on("end", resolve));
      // Byte by byte through the first 40 bytes: the stored block's header may be cut anywhere.
      for (let i = 0; i < Math.min(40, wire.length); i++) gunzip.write(wire.subarray(i, i + 1));
      gunzip.end(wire.subarray(Math.min(40, wire.length)));
      await ended;
      expect(Buffer.concat(streamed).toString("utf8")).toBe(head + tailText);
    }
  });

  it("deflates the tail once for every answer that shares it, and compresses it", () => {
    const tail = new DeflatedTail(users(2000));
    const first = gzipWithSharedTail(Buffer.from('{"from":"one"'), tail);
    const blocks = tail.deflated;
    const second = gzipWithSharedTail(Buffer.from('{"from":"two"'), tail);
    expect(tail.deflated).toBe(blocks);
    expect(zlib.gunzipSync(second).toString()).toBe(`{"from":"two"${users(2000)}`);
    expect(first.length).toBeLessThan(tail.bytes.length / 2);
  });

  it("refuses a head larger than a stored block", () => {
    expect(() => gzipWithSharedTail(Buffer.alloc(MAX_STORED_HEAD + 1), new DeflatedTail("}"))).toThrow(/head: a stored block holds at most 65535 bytes/);
    expect(zlib.gunzipSync(gzipWithSharedTail(Buffer.alloc(MAX_STORED_HEAD, 0x61), new DeflatedTail("}"))).length).toBe(MAX_STORED_HEAD + 1);
  });

  it("computes CRC-32 as zlib does, continued from a previous value, with or without zlib's own", () => {
    const a = Buffer.from("routeboard");
    const b = Buffer.from(" config delta ✓");
    for (const f of [crc32, crc32Computed]) {
      expect(f(Buffer.from("123456789"), 0)).toBe(0xcbf43926);
      expect(f(b, f(a, 0))).toBe(f(Buffer.concat([a, b]), 0));
      expect(f(Buffer.alloc(0), 0)).toBe(0);
    }
    expect(crc32Computed(Buffer.from(users(50)), 0)).toBe(zlib.crc32(Buffer.from(users(50))));
  });
});
