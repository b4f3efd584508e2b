/** Where old subscription URLs may be served: never over the app's own routes. */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { machineRoutes } from "@/server/services";
import { LegacyIndex, MARZBAN_HOST_PREFIX, RESERVED_SEGMENTS, marzbanToken, prefixProblem } from "./legacy";

const root = path.resolve(__dirname, "../..");

describe("legacy prefixes", () => {
  it("reserve every first segment the app serves: its pages and its machine routes", () => {
    // app/(group)/x and app/x are both served at /x.
    const pages = (dir: string): string[] =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (!d.isDirectory() ? [] : d.name.startsWith("(") ? pages(path.join(dir, d.name)) : [d.name]));
    const machine = [...Object.keys(machineRoutes.exact), ...machineRoutes.prefixes.map(([p]) => p)].map((p) => p.split("/")[1]!).filter((s) => s !== "sub");
    const publicFiles = fs.readdirSync(path.join(root, "public"));
    for (const segment of [...pages(path.join(root, "app")), ...machine, ...publicFiles]) expect(RESERVED_SEGMENTS, segment).toContain(segment);
  });

  it("refuse a root prefix without a host, reserved and malformed prefixes", () => {
    expect(prefixProblem("/sub/", "")).toBeNull();
    expect(prefixProblem("/api/v1/sub/", "")).toMatch(/shadow/);
    expect(prefixProblem("/clusters/", "")).toMatch(/shadow/);
    expect(prefixProblem("/", "")).toMatch(/needs the old subscription host/);
    expect(prefixProblem("/", "sub.example.com")).toBeNull();
    expect(prefixProblem("sub/", "")).toMatch(/start and end/);
    expect(prefixProblem("/a/../", "")).toMatch(/segment/);
    expect(prefixProblem("/s p/", "")).toMatch(/segment/);
    expect(prefixProblem("/", "bad host!")).toMatch(/host name/);
  });

  it("the index answers a root path only on its host, a prefix on every host", () => {
    const ix = new LegacyIndex(
      [
        { host: "sub.example.com", path: "/abc", subscriberId: "s1", notBefore: null },
        { host: "", path: "/old/xyz", subscriberId: "s2", notBefore: null },
      ],
      [],
    );
    expect(ix.mayServe("sub.example.com", "/abc")).toBe(true);
    expect(ix.resolve("SUB.example.com", "/abc")).toBe("s1");
    expect(ix.mayServe("panel.example.com", "/abc")).toBe(false);
    // The old host's other root paths stay the app's, should the dashboard be served there too.
    expect(ix.mayServe("sub.example.com", "/login")).toBe(false);
    expect(ix.mayServe("sub.example.com", "/")).toBe(false);
    expect(ix.resolve("panel.example.com", "/abc")).toBeNull();
    expect(ix.mayServe("anything", "/old/xyz")).toBe(true);
    expect(ix.resolve(null, "/old/xyz")).toBe("s2");
    expect(ix.resolve(null, "/old/nope")).toBeNull();
  });

  it("replacing some subscribers' URLs leaves the others', and a key taken over moves with its new owner", () => {
    const secret = "marzban-secret";
    const tag = "t1";
    const ix = new LegacyIndex(
      [
        { host: "", path: "/sub/a1", subscriberId: "a", notBefore: null },
        { host: "", path: "/sub/a2", subscriberId: "a", notBefore: null },
        { host: "", path: "/sub/b1", subscriberId: "b", notBefore: null },
        { host: `${MARZBAN_HOST_PREFIX}${tag}`, path: "/sub/alice", subscriberId: "a", notBefore: null },
      ],
      [{ prefix: "/sub/", tag, secret }],
    );
    const token = marzbanToken("alice", secret, 1_700_000_000);
    expect(ix.resolve(null, `/sub/${token}`)).toBe("a");
    ix.replaceSubscribers(["a"], [{ host: "", path: "/sub/a3", subscriberId: "a", notBefore: null }]);
    expect([ix.resolve(null, "/sub/a1"), ix.resolve(null, "/sub/a2"), ix.resolve(null, "/sub/a3"), ix.resolve(null, "/sub/b1")]).toEqual([null, null, "a", "b"]);
    // Marzban's tokens of a were taken out with its other rows.
    expect(ix.resolve(null, `/sub/${token}`)).toBeNull();
    // c takes b's key over (b's row gone, c's stored): b no longer answers for it, and
    // replacing b later does not take c's key out.
    ix.replaceSubscribers(["b", "c"], [{ host: "", path: "/sub/b1", subscriberId: "c", notBefore: null }]);
    expect(ix.resolve(null, "/sub/b1")).toBe("c");
    ix.replaceSubscribers(["b"], []);
    expect(ix.resolve(null, "/sub/b1")).toBe("c");
    ix.replaceSubscribers(["c"], []);
    expect(ix.resolve(null, "/sub/b1")).toBeNull();
    expect(ix.size).toBe(1);
  });
});
