import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkListeners } from "./checks";

describe("checkListeners", () => {
  let listening: net.Server;
  let openPort = 0;
  let closedPort = 0;
  beforeAll(async () => {
    listening = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => listening.listen(0, "127.0.0.1", r));
    openPort = (listening.address() as net.AddressInfo).port;
    // A port that was just free: bound, read, released.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    closedPort = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
  });
  afterAll(() => new Promise<void>((r) => listening.close(() => r())));

  it("names the inbound whose port refuses, and is not alive then", async () => {
    const r = await checkListeners(
      [
        { inboundId: "a", port: openPort },
        { inboundId: "b", port: closedPort },
      ],
      1000,
    );
    expect(r.alive).toBe(false);
    expect(r.down).toEqual([{ inboundId: "b", port: closedPort, error: "ECONNREFUSED" }]);
  });

  it("is alive when every served port accepts, and not when nothing is served", async () => {
    expect(await checkListeners([{ inboundId: "a", port: openPort }], 1000)).toEqual({ alive: true, down: [] });
    expect(await checkListeners([], 1000)).toEqual({ alive: false, down: [] });
  });
});
