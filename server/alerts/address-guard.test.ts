/**
 * The webhook address guard (issue 21, point 5): which addresses are refused, the URL forms
 * that name this machine, and a real POST to a receiver on 127.0.0.1 that must not arrive
 * when the guard is on, whether the URL names it by IP, by `localhost` or by a name whose
 * lookup answers 127.0.0.1 (DNS rebinding).
 */
import { createServer, type Server } from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { guardedLookup, isPrivateAddress, privateUrlReason, PrivateAddressError, type LookupFn } from "./address-guard";
import { peerRefusal, postAlert } from "./send";

describe("isPrivateAddress", () => {
  it.each([
    "127.0.0.1",
    "127.255.255.254",
    "0.0.0.0",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.127.255.255",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "[::1]",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "0:0:0:0:0:ffff:a01:203",
    "::127.0.0.1",
    "64:ff9b::7f00:1",
    "2002:7f00:1::",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "ff02::1",
    "not-an-ip",
  ])("refuses %s", (ip) => expect(isPrivateAddress(ip)).toBe(true));

  it.each(["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "169.255.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "2002:808:808::"])("allows %s", (ip) =>
    expect(isPrivateAddress(ip)).toBe(false),
  );
});

describe("privateUrlReason (on save)", () => {
  // Every form the issue delivered to, plus names that always mean this machine.
  it.each([
    "http://127.0.0.1/hook",
    "http://localhost:8080/hook",
    "http://LOCALHOST./hook",
    "http://api.localhost/hook",
    "http://[::1]/hook",
    "http://0.0.0.0/hook",
    "http://0/hook",
    "http://2130706433/hook",
    "http://0x7f000001/hook",
    "http://127.1/hook",
    "http://0177.0.0.1/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "https://169.254.169.254/latest/meta-data",
    "http://10.0.0.5/",
    "http://[fd00::5]/",
  ])("refuses %s", (url) => expect(privateUrlReason(url)).toMatch(/must not point at this machine or a private network/));

  it.each(["https://hooks.slack.com/services/T0/B0/XXXX", "https://93.184.216.34/hook", "http://example.com:8080/x"])("allows %s", (url) => expect(privateUrlReason(url)).toBeNull());
});

describe("postAlert", () => {
  let server: Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits++;
      req.resume();
      res.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** A resolver that answers 127.0.0.1 for every name, as a rebinding DNS server would. */
  const rebinding: LookupFn = (_name, options, cb) => (options.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4));
  const send = (url: string, guard: boolean, lookup?: LookupFn) => postAlert(url, { "content-type": "application/json" }, "{}", { timeoutMs: 2000, guard, lookup });

  it("without the guard (the lab switch) a loopback receiver gets it", async () => {
    const before = hits;
    expect(await send(`http://127.0.0.1:${port}/hook`, false)).toMatchObject({ status: 200, text: "ok" });
    expect(hits).toBe(before + 1);
  });

  it("with the guard, a loopback IP literal in any form is refused before connecting", async () => {
    const before = hits;
    for (const host of ["127.0.0.1", "[::ffff:127.0.0.1]", "2130706433", "0x7f000001", "127.1", "0177.0.0.1"]) {
      await expect(send(`http://${host}:${port}/hook`, true)).rejects.toBeInstanceOf(PrivateAddressError);
    }
    expect(hits).toBe(before);
  });

  it("with the guard, `localhost` (resolved by the system) and a name that resolves to 127.0.0.1 are refused; nothing arrives", async () => {
    const before = hits;
    await expect(send(`http://localhost:${port}/hook`, true)).rejects.toBeInstanceOf(PrivateAddressError);
    await expect(send(`http://hooks.example.test:${port}/hook`, true, rebinding)).rejects.toBeInstanceOf(PrivateAddressError);
    expect(hits).toBe(before);
    // The same name and resolver without the guard does reach it: the refusal was the guard's.
    expect(await send(`http://hooks.example.test:${port}/hook`, false, rebinding)).toMatchObject({ status: 200 });
    expect(hits).toBe(before + 1);
  });

  it("the socket check reads the connected peer's real address", async () => {
    const sock = net.connect({ host: "127.0.0.1", port });
    await new Promise<void>((resolve, reject) => sock.once("connect", resolve).once("error", reject));
    try {
      expect(sock.remoteAddress).toBe("127.0.0.1");
      expect(peerRefusal(sock)).toBeInstanceOf(PrivateAddressError);
      // What it would say of a public peer (a socket's remoteAddress is read-only: a stand-in).
      expect(peerRefusal({ remoteAddress: "93.184.216.34" } as net.Socket)).toBeNull();
    } finally {
      sock.destroy();
    }
  });

  it("the guarded lookup keeps public answers and drops private ones", async () => {
    const mixed: LookupFn = (_n, _o, cb) =>
      cb(null, [
        { address: "10.0.0.1", family: 4 },
        { address: "93.184.216.34", family: 4 },
        { address: "::1", family: 6 },
      ]);
    const got = await new Promise((resolve, reject) => guardedLookup(mixed)("x.test", { all: true }, (err, a) => (err ? reject(err) : resolve(a))));
    expect(got).toEqual([{ address: "93.184.216.34", family: 4 }]);
    const one = await new Promise((resolve, reject) => guardedLookup(mixed)("x.test", {}, (err, a, f) => (err ? reject(err) : resolve([a, f]))));
    expect(one).toEqual(["93.184.216.34", 4]);
  });
});
