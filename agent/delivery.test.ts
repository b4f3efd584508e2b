import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Delivery } from "./delivery";
import { tempDir } from "./test-support";

const dir = tempDir("rb-delivery-");
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const t = (entries: Array<[string, number, number]>) => new Map(entries.map(([e, up, down]) => [e, { up, down }]));

describe("Delivery", () => {
  it("has nothing to send without traffic, and leaves zero rows out", () => {
    const d = new Delivery(null);
    expect(d.next()).toBeNull();
    d.add(t([["a", 0, 0]]));
    expect(d.next()).toBeNull();
    expect(d.instance).toMatch(/^[A-Za-z0-9_-]{8,64}$/);
  });

  it("numbers batches, resends the same batch until acknowledged, and accumulates meanwhile", () => {
    const d = new Delivery(null);
    d.add(t([["a", 10, 20]]));
    const first = d.next()!;
    expect(first).toEqual({ instance: d.instance, seq: 1, users: [{ email: "a", up: 10, down: 20 }] });
    // The panel is away: more traffic arrives, the same batch goes out again.
    d.add(t([["a", 1, 1], ["b", 5, 0]]));
    expect(d.next()).toEqual(first);
    expect(d.acknowledge(1)).toBe(true);
    expect(d.next()).toEqual({ instance: d.instance, seq: 2, users: [{ email: "a", up: 1, down: 1 }, { email: "b", up: 5, down: 0 }] });
    // A duplicate ack is an ack: the caller passes it the same way.
    expect(d.acknowledge(2)).toBe(false);
    expect(d.next()).toBeNull();
    // A stale ack does nothing.
    d.add(t([["c", 1, 1]]));
    expect(d.next()!.seq).toBe(3);
    d.acknowledge(2);
    expect(d.next()!.seq).toBe(3);
  });

  it("drops a batch the panel rejected without reusing its seq", () => {
    const d = new Delivery(null);
    d.add(t([["a", 1, 1]]));
    const b = d.next()!;
    expect(d.drop(b.seq)).toEqual([{ email: "a", up: 1, down: 1 }]);
    d.add(t([["a", 2, 2]]));
    expect(d.next()!.seq).toBe(2);
  });

  it("keeps the unacknowledged and the open batch across restarts", () => {
    const file = path.join(dir, "delivery.json");
    const d = new Delivery(file);
    d.add(t([["a", 100, 200]]));
    const pending = d.next()!;
    d.add(t([["b", 7, 8]]));
    const restarted = new Delivery(file);
    expect(restarted.instance).toBe(d.instance);
    expect(restarted.next()).toEqual(pending);
    restarted.acknowledge(pending.seq);
    const again = new Delivery(file);
    expect(again.next()).toEqual({ instance: d.instance, seq: 2, users: [{ email: "b", up: 7, down: 8 }] });
    // No temp files left behind.
    expect(fs.readdirSync(dir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });

  it("refuses a corrupt state file with a message naming it", () => {
    const file = path.join(dir, "bad.json");
    fs.writeFileSync(file, JSON.stringify({ instance: "x" }));
    expect(() => new Delivery(file)).toThrow(/bad\.json: not a delivery state file/);
  });
});
