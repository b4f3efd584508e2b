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
  // Integer settings: the default when unset or empty, the values given, and a refusal naming
  // the variable and its range for each bad value.
  const integerSettings = [
    { name: "ROUTEBOARD_SWEEP_MS", def: 2000, good: [["250", 250]], bad: ["99", "60001", "1.5", "soon"], says: "must be an integer number of milliseconds in 100–60000" },
    { name: "DATABASE_POOL_SIZE", def: 10, good: [["40", 40], ["1", 1]], bad: ["0", "201", "2.5", "many"], says: "must be an integer number of connections in 1–200" },
    { name: "ROUTEBOARD_HEAP_GROWTH_PERCENT", def: 100, good: [["0", 0], ["50", 50]], bad: ["-1", "401", "1.5", "half"], says: "must be an integer percent in 0–400 (0: V8's own rule)" },
  ] as const;
  it.each(integerSettings)("reads $name here, not where it is used: $def by default", ({ name, def, good, bad, says }) => {
    expect(parseEnv({})[name]).toBe(def);
    expect(parseEnv({ [name]: "" })[name]).toBe(def);
    for (const [text, value] of good) expect(parseEnv({ [name]: text })[name]).toBe(value);
    for (const b of bad) expect(() => parseEnv({ [name]: b })).toThrow(`Configuration error: ${name} ${says}`);
  });
  it("reads LOG_LEVEL; ROUTEBOARD_HEAP_GROWTH_PERCENT stands for V8's flag, 0 for none", () => {
    expect(parseEnv({}).LOG_LEVEL).toBe("info");
    expect(() => parseEnv({ LOG_LEVEL: "loud" })).toThrow(/LOG_LEVEL/);
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
