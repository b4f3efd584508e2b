import { describe, expect, it } from "vitest";
import { cleanDeviceText, DEVICE_ID_MAX, deviceAccess, deviceFromHeaders, deviceLabel, type KnownDevice } from "./devices";

const dev = (hwid: string, firstSeenAt: number, lastSeenAt = firstSeenAt): KnownDevice => ({ hwid, firstSeenAt, lastSeenAt });
const two = [dev("phone", 1), dev("laptop", 2)];

describe("deviceAccess", () => {
  it("no limit: any device is served and recorded; no device id is served too, even where the cluster refuses them", () => {
    expect(deviceAccess({ hwid: "new", devices: two, limit: null, devicelessFetches: "allow" })).toEqual({ allowed: true, record: "add" });
    expect(deviceAccess({ hwid: "phone", devices: two, limit: null, devicelessFetches: "allow" })).toEqual({ allowed: true, record: "touch" });
    expect(deviceAccess({ hwid: null, devices: two, limit: null, devicelessFetches: "refuse" })).toEqual({ allowed: true, record: "none" });
  });

  it("under the limit, a new device is added", () => {
    expect(deviceAccess({ hwid: "tablet", devices: two, limit: 3, devicelessFetches: "allow" })).toEqual({ allowed: true, record: "add" });
  });

  it("at the limit, a new device is refused and not recorded; a known one is served", () => {
    expect(deviceAccess({ hwid: "tablet", devices: two, limit: 2, devicelessFetches: "allow" })).toEqual({ allowed: false, reason: "device-limit", limit: 2 });
    expect(deviceAccess({ hwid: "laptop", devices: two, limit: 2, devicelessFetches: "allow" })).toEqual({ allowed: true, record: "touch" });
  });

  it("the same device again is the same device: never counted twice", () => {
    const one = [dev("phone", 1)];
    for (let i = 0; i < 3; i++) expect(deviceAccess({ hwid: "phone", devices: one, limit: 1, devicelessFetches: "allow" })).toEqual({ allowed: true, record: "touch" });
  });

  it("no device id with a limit: served when the cluster allows it, refused when it refuses", () => {
    expect(deviceAccess({ hwid: null, devices: two, limit: 1, devicelessFetches: "allow" })).toEqual({ allowed: true, record: "none" });
    expect(deviceAccess({ hwid: null, devices: [], limit: 5, devicelessFetches: "refuse" })).toEqual({ allowed: false, reason: "no-device-id" });
  });

  it("a limit lowered below the count keeps the devices seen first and refuses the newest", () => {
    const three = [dev("c", 30, 100), dev("a", 10, 50), dev("b", 20, 200)];
    const at = (hwid: string) => deviceAccess({ hwid, devices: three, limit: 2, devicelessFetches: "allow" });
    expect(at("a")).toEqual({ allowed: true, record: "touch" });
    expect(at("b")).toEqual({ allowed: true, record: "touch" });
    expect(at("c")).toEqual({ allowed: false, reason: "device-limit", limit: 2 });
    expect(at("d")).toEqual({ allowed: false, reason: "device-limit", limit: 2 });
    // Seen at the same instant: the id decides, the same way on every instance.
    const tied = [dev("y", 5), dev("x", 5)];
    expect(deviceAccess({ hwid: "x", devices: tied, limit: 1, devicelessFetches: "allow" }).allowed).toBe(true);
    expect(deviceAccess({ hwid: "y", devices: tied, limit: 1, devicelessFetches: "allow" }).allowed).toBe(false);
  });

  it("without a limit, the stored devices are capped: the least recently seen makes room", () => {
    const full = [dev("a", 1, 90), dev("b", 2, 10), dev("c", 3, 50)];
    expect(deviceAccess({ hwid: "d", devices: full, limit: null, devicelessFetches: "allow", storedMax: 3 })).toEqual({ allowed: true, record: "add", evict: "b" });
    expect(deviceAccess({ hwid: "a", devices: full, limit: null, devicelessFetches: "allow", storedMax: 3 })).toEqual({ allowed: true, record: "touch" });
  });
});

describe("device headers", () => {
  it("keeps the first value, drops control and bidi characters, trims and bounds the length", () => {
    expect(cleanDeviceText(["abc", "def"], 10)).toBe("abc");
    expect(cleanDeviceText("  a\u0000b\u001b[31mc\u202ed\u200b  ", 64)).toBe("ab[31mcd");
    expect(cleanDeviceText("x".repeat(500), DEVICE_ID_MAX)).toHaveLength(DEVICE_ID_MAX);
    expect(cleanDeviceText("\u0007\u0008 ", 10)).toBeNull();
    // UTF-8 as Node hands it over (one character per byte) is decoded; Latin-1 that is not UTF-8 stays.
    const asNodeReadsIt = (text: string) => String.fromCharCode(...new TextEncoder().encode(text));
    expect(cleanDeviceText(asNodeReadsIt("Pixel 8 – Олег 📱"), 64)).toBe("Pixel 8 – Олег 📱");
    expect(cleanDeviceText("caf\u00e9", 64)).toBe("café");
    expect(cleanDeviceText("Олег", 64)).toBe("Олег");
    expect(cleanDeviceText(undefined, 10)).toBeNull();
    // Never cut inside a surrogate pair; a lone surrogate is dropped.
    expect(cleanDeviceText("😀😀😀", 2)).toBe("😀😀");
    expect(cleanDeviceText("a\ud800b", 10)).toBe("ab");
  });

  it("reads x-hwid, x-device-os, x-ver-os, x-device-model and the User-Agent", () => {
    expect(deviceFromHeaders({ "x-hwid": "abcd-1234", "x-device-os": "iOS", "x-ver-os": "17.4", "x-device-model": "iPhone15,2", "user-agent": "Happ/3.5.0" })).toEqual({
      hwid: "abcd-1234",
      os: "iOS",
      osVersion: "17.4",
      model: "iPhone15,2",
      userAgent: "Happ/3.5.0",
    });
    expect(deviceFromHeaders({ "x-hwid": "   " }).hwid).toBeNull();
  });

  it("labels a device by model and OS, else by its app", () => {
    expect(deviceLabel({ model: "Pixel 8", os: "Android", osVersion: "14", userAgent: "Happ/1" })).toBe("Pixel 8 · Android 14");
    expect(deviceLabel({ model: null, os: null, osVersion: null, userAgent: "v2rayTun/4" })).toBe("v2rayTun/4");
    expect(deviceLabel({ model: null, os: null, osVersion: null, userAgent: null })).toBe("Unknown device");
  });
});
