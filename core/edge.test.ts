import { describe, expect, it } from "vitest";
import { BLOCKED_CIDRS, isBlockedAddress, netContains, parseAllowedDestination, parseCidr, parseIp, parseIPv6 } from "./edge";

const ok = (s: string) => {
  const p = parseAllowedDestination(s);
  if (!p.ok) throw new Error(p.error);
  return p.value;
};
const error = (s: string) => {
  const p = parseAllowedDestination(s);
  if (p.ok) throw new Error(`${s} was accepted`);
  return p.error;
};

describe("addresses", () => {
  it("parses IPv6 in every written form", () => {
    expect(parseIPv6("::1")).toEqual([...Array(15).fill(0), 1]);
    expect(parseIPv6("::")).toEqual(Array(16).fill(0));
    expect(parseIPv6("fd00::7")).toEqual([0xfd, 0, ...Array(13).fill(0), 7]);
    expect(parseIPv6("1:2:3:4:5:6:7:8")).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
    expect(parseIPv6("::ffff:10.0.0.1")).toEqual([...Array(10).fill(0), 255, 255, 10, 0, 0, 1]);
    expect(parseIPv6("1:2:3:4:5:6:1.2.3.4")).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 1, 2, 3, 4]);
    for (const bad of ["1:2:3:4:5:6:7:8:9", "1::2::3", "1:2:3:4:5:6:7", ":1::", "1::2:", "12345::", "g::1", "1:2:3:4:5:6:7::8"]) expect(parseIPv6(bad), bad).toBeNull();
  });

  it("matches the ranges the issue lists, and not public addresses", () => {
    for (const ip of ["127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "100.127.255.255", "0.0.0.0", "224.0.0.1", "239.255.255.250", "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1"]) {
      expect(isBlockedAddress(parseIp(ip)!), ip).toBe(true);
    }
    for (const ip of ["8.8.8.8", "172.32.0.1", "100.128.0.1", "192.169.0.1", "2001:4860:4860::8888", "11.0.0.1"]) expect(isBlockedAddress(parseIp(ip)!), ip).toBe(false);
    // Every range is a CIDR the cores parse (no geoip:private: Debian's v2ray may lack geoip.dat).
    for (const c of BLOCKED_CIDRS) expect(parseCidr(c), c).not.toBeNull();
    expect(netContains(parseCidr("10.0.0.0/24")!, parseIp("10.0.0.255")!)).toBe(true);
    expect(netContains(parseCidr("10.0.0.0/24")!, parseIp("10.0.1.0")!)).toBe(false);
  });
});

describe("allowed destinations", () => {
  it("takes ip[:port] and cidr[:port], IPv6 with a port in brackets", () => {
    expect(ok("127.0.0.1:8080")).toEqual({ ip: "127.0.0.1", port: 8080 });
    expect(ok(" 10.0.0.5 ")).toEqual({ ip: "10.0.0.5", port: null });
    expect(ok("10.0.0.0/24:5432")).toEqual({ ip: "10.0.0.0/24", port: 5432 });
    expect(ok("fd00::7")).toEqual({ ip: "fd00::7", port: null });
    expect(ok("FD00::/64")).toEqual({ ip: "fd00::/64", port: null });
    expect(ok("[fd00::7]:8080")).toEqual({ ip: "fd00::7", port: 8080 });
    expect(ok("[fd00::/64]:443")).toEqual({ ip: "fd00::/64", port: 443 });
  });

  it("says what is wrong with a bad entry", () => {
    expect(error("")).toMatch(/empty/);
    expect(error("db.internal")).toMatch(/not a host name/);
    expect(error("localhost:8080")).toMatch(/not a host name/);
    expect(error("10.0.0.5:0")).toMatch(/port must be a number from 1 to 65535/);
    expect(error("10.0.0.5:http")).toMatch(/port must be a number/);
    expect(error("10.0.0.5/33")).toMatch(/not an IP address or a CIDR/);
    expect(error("10.0.0.5/8")).toMatch(/bits set past \/8; did you mean 10\.0\.0\.0\/8\?/);
    expect(error("fd00::1/64")).toMatch(/did you mean fd00:0:0:0:0:0:0:0\/64/);
    expect(error("0.0.0.0/0")).toMatch(/every address/);
    expect(error("::/0")).toMatch(/every address/);
    expect(error("[10.0.0.1]:80")).toMatch(/brackets are for IPv6/);
    expect(error("[fd00::1]80")).toMatch(/\[address\]:port/);
    expect(error("fe80::1%eth0")).toMatch(/zone/);
    expect(error("::ffff:127.0.0.1")).toMatch(/IPv4 address itself/);
    expect(error("999.0.0.1")).toMatch(/not an IP address/);
  });
});
