import { describe, expect, it } from "vitest";
import { ConfigError, heapGrowthFlag, parseEnv } from "./env";

describe("parseEnv", () => {
  it("gives defaults for an empty environment", () => {
    const e = parseEnv({});
    expect(e.PORT).toBe(3000);
    expect(e.DATA_DIR).toBe("./data");
    expect(e.DATABASE_URL).toBeUndefined();
    expect(e.ROUTEBOARD_DEMO).toBe(true);
  });
  it("accepts a postgres URL and treats an empty one as unset", () => {
    expect(parseEnv({ DATABASE_URL: "postgres://u:p@localhost:5432/db" }).DATABASE_URL).toContain("localhost");
    expect(parseEnv({ DATABASE_URL: "" }).DATABASE_URL).toBeUndefined();
  });
  it.each([["mysql://localhost/db"], ["not a url"], ["postgres://"]])("refuses DATABASE_URL=%s with one line", (v) => {
    expect(() => parseEnv({ DATABASE_URL: v })).toThrow(ConfigError);
    expect(() => parseEnv({ DATABASE_URL: v })).toThrow(/^Configuration error: DATABASE_URL must look like postgres:/);
  });
  it("refuses a bad port and ROUTEBOARD_DEMO value, naming the variable", () => {
    expect(() => parseEnv({ PORT: "99999" })).toThrow(/PORT/);
    expect(() => parseEnv({ ROUTEBOARD_DEMO: "maybe" })).toThrow(/ROUTEBOARD_DEMO/);
  });
  it("wants ADMIN_USERNAME and ADMIN_PASSWORD together", () => {
    expect(() => parseEnv({ ADMIN_USERNAME: "root" })).toThrow(/together/);
    expect(() => parseEnv({ ADMIN_USERNAME: "root", ADMIN_PASSWORD: "short" })).toThrow(/ADMIN_PASSWORD must be at least 8/);
    expect(parseEnv({ ADMIN_USERNAME: "root", ADMIN_PASSWORD: "long-enough" }).ADMIN_USERNAME).toBe("root");
  });
  it("keeps webhooks off private addresses unless ROUTEBOARD_ALERTS_ALLOW_PRIVATE is set", () => {
    expect(parseEnv({}).ROUTEBOARD_ALERTS_ALLOW_PRIVATE).toBe(false);
    expect(parseEnv({ ROUTEBOARD_ALERTS_ALLOW_PRIVATE: "1" }).ROUTEBOARD_ALERTS_ALLOW_PRIVATE).toBe(true);
    expect(() => parseEnv({ ROUTEBOARD_ALERTS_ALLOW_PRIVATE: "sometimes" })).toThrow(/ROUTEBOARD_ALERTS_ALLOW_PRIVATE/);
  });
  it("turns ROUTEBOARD_DEMO=0 off", () => {
    expect(parseEnv({ ROUTEBOARD_DEMO: "0" }).ROUTEBOARD_DEMO).toBe(false);
  });
  it("reads TRUST_PROXY as a number of proxies, off by default", () => {
    expect(parseEnv({}).TRUST_PROXY).toBe(0);
    expect(parseEnv({ TRUST_PROXY: "" }).TRUST_PROXY).toBe(0);
    expect(parseEnv({ TRUST_PROXY: "2" }).TRUST_PROXY).toBe(2);
    expect(parseEnv({ TRUST_PROXY: "true" }).TRUST_PROXY).toBe(1);
    expect(parseEnv({ TRUST_PROXY: "false" }).TRUST_PROXY).toBe(0);
    expect(() => parseEnv({ TRUST_PROXY: "nginx" })).toThrow(/^Configuration error: TRUST_PROXY must be the number of proxies in front of the app/);
    expect(() => parseEnv({ TRUST_PROXY: "-1" })).toThrow(/TRUST_PROXY/);
  });
  it("reads ROUTEBOARD_SWEEP_MS and LOG_LEVEL here, not where they are used", () => {
    expect(parseEnv({}).ROUTEBOARD_SWEEP_MS).toBe(2000);
    expect(parseEnv({ ROUTEBOARD_SWEEP_MS: "" }).ROUTEBOARD_SWEEP_MS).toBe(2000);
    expect(parseEnv({ ROUTEBOARD_SWEEP_MS: "250" }).ROUTEBOARD_SWEEP_MS).toBe(250);
    for (const bad of ["99", "60001", "1.5", "soon"]) {
      expect(() => parseEnv({ ROUTEBOARD_SWEEP_MS: bad })).toThrow(/^Configuration error: ROUTEBOARD_SWEEP_MS must be an integer number of milliseconds in 100–60000/);
    }
    expect(parseEnv({}).LOG_LEVEL).toBe("info");
    expect(() => parseEnv({ LOG_LEVEL: "loud" })).toThrow(/LOG_LEVEL/);
  });
  it("reads DATABASE_POOL_SIZE: 10 by default, 1–200 connections", () => {
    expect(parseEnv({}).DATABASE_POOL_SIZE).toBe(10);
    expect(parseEnv({ DATABASE_POOL_SIZE: "" }).DATABASE_POOL_SIZE).toBe(10);
    expect(parseEnv({ DATABASE_POOL_SIZE: "40" }).DATABASE_POOL_SIZE).toBe(40);
    for (const bad of ["0", "201", "2.5", "many"]) {
      expect(() => parseEnv({ DATABASE_POOL_SIZE: bad })).toThrow(/^Configuration error: DATABASE_POOL_SIZE must be an integer number of connections in 1–200/);
    }
  });
  it("reads ROUTEBOARD_HEAP_GROWTH_PERCENT: 100 by default, 0 for V8's own rule, nothing else", () => {
    expect(parseEnv({}).ROUTEBOARD_HEAP_GROWTH_PERCENT).toBe(100);
    expect(parseEnv({ ROUTEBOARD_HEAP_GROWTH_PERCENT: "" }).ROUTEBOARD_HEAP_GROWTH_PERCENT).toBe(100);
    expect(parseEnv({ ROUTEBOARD_HEAP_GROWTH_PERCENT: "0" }).ROUTEBOARD_HEAP_GROWTH_PERCENT).toBe(0);
    expect(parseEnv({ ROUTEBOARD_HEAP_GROWTH_PERCENT: "50" }).ROUTEBOARD_HEAP_GROWTH_PERCENT).toBe(50);
    for (const bad of ["-1", "401", "1.5", "half"]) {
      expect(() => parseEnv({ ROUTEBOARD_HEAP_GROWTH_PERCENT: bad })).toThrow(/^Configuration error: ROUTEBOARD_HEAP_GROWTH_PERCENT must be an integer percent in 0–400/);
    }
    expect(heapGrowthFlag(100)).toBe("--heap-growing-percent=100");
    expect(heapGrowthFlag(0)).toBeNull();
  });
  it("reads ROUTEBOARD_TELEGRAM_API_URL: the real API by default, only http(s)", () => {
    expect(parseEnv({}).ROUTEBOARD_TELEGRAM_API_URL).toBe("https://api.telegram.org");
    expect(parseEnv({ ROUTEBOARD_TELEGRAM_API_URL: "" }).ROUTEBOARD_TELEGRAM_API_URL).toBe("https://api.telegram.org");
    expect(parseEnv({ ROUTEBOARD_TELEGRAM_API_URL: "http://127.0.0.1:9999" }).ROUTEBOARD_TELEGRAM_API_URL).toBe("http://127.0.0.1:9999");
    expect(() => parseEnv({ ROUTEBOARD_TELEGRAM_API_URL: "ftp://x" })).toThrow(/^Configuration error: ROUTEBOARD_TELEGRAM_API_URL must be an http\(s\) URL/);
    expect(() => parseEnv({ ROUTEBOARD_TELEGRAM_API_URL: "not a url" })).toThrow(ConfigError);
  });
});
