import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import {
  agentReportSchema,
  DEFAULT_PROBE_CONFIG,
  formatZodError,
  mergeProbeConfig,
  effectiveProbeConfig,
  safeMergeProbeConfig,
  PROBE_DEFAULTS,
  probeConfigSchema,
  probeOverrideSchema,
} from "./monitoring-contract";

const good = () => ({
  listenerAlive: true,
  serviceRunning: true,
  usersOnline: 12,
  rxBps: 1_000_000,
  txBps: 2_000_000,
  cpu: 12.5,
  memory: 40,
  neighbours: [
    { serverId: randomUUID(), ok: true, rttMs: 3.2 },
    { serverId: randomUUID(), ok: false, rttMs: null },
  ],
  sentAt: new Date().toISOString(),
});

function errorOf(input: unknown): string {
  const r = agentReportSchema.safeParse(input);
  expect(r.success).toBe(false);
  return r.success ? "" : formatZodError(r.error);
}

describe("agentReportSchema", () => {
  it("accepts a full report, and one without sentAt", () => {
    expect(agentReportSchema.safeParse(good()).success).toBe(true);
    const { sentAt: _s, ...rest } = good();
    expect(agentReportSchema.safeParse(rest).success).toBe(true);
    expect(agentReportSchema.safeParse({ ...good(), sentAt: "2025-01-01T00:00:00+02:00" }).success).toBe(true);
    expect(agentReportSchema.safeParse({ ...good(), neighbours: [] }).success).toBe(true);
  });

  it("names the first bad field", () => {
    expect(errorOf({ ...good(), usersOnline: -1 })).toBe("usersOnline: expected number ≥ 0");
    expect(errorOf({ ...good(), usersOnline: 1.5 })).toBe("usersOnline: expected integer");
    expect(errorOf({ ...good(), cpu: 100.1 })).toBe("cpu: expected number ≤ 100");
    expect(errorOf({ ...good(), memory: -0.1 })).toBe("memory: expected number ≥ 0");
    expect(errorOf({ ...good(), rxBps: -5 })).toBe("rxBps: expected number ≥ 0");
    expect(errorOf({ ...good(), txBps: "5" })).toMatch(/^txBps: expected number/);
    expect(errorOf({ ...good(), listenerAlive: "yes" })).toMatch(/^listenerAlive: expected boolean/);
    expect(errorOf({ ...good(), extra: 1 })).toBe("extra: unknown field");
    expect(errorOf({ ...good(), sentAt: "yesterday" })).toBe("sentAt: expected an ISO 8601 date-time");
    expect(errorOf(null)).toMatch(/^\(root\): expected object/);
  });

  it("listenersDown: optional (older agents), strict rows, one per inbound, only with listenerAlive false", () => {
    const id = randomUUID();
    const down = { ...good(), listenerAlive: false, listenersDown: [{ inboundId: id, port: 443, error: "ECONNREFUSED" }] };
    expect(agentReportSchema.safeParse(down).success).toBe(true);
    expect(agentReportSchema.safeParse({ ...good(), listenersDown: [] }).success).toBe(true);
    expect(errorOf({ ...down, listenersDown: [{ inboundId: "nope", port: 443, error: "x" }] })).toMatch(/^listenersDown\[0\]\.inboundId: /);
    expect(errorOf({ ...down, listenersDown: [{ inboundId: id, port: 0, error: "x" }] })).toBe("listenersDown[0].port: expected number ≥ 1");
    expect(errorOf({ ...down, listenersDown: [{ inboundId: id, port: 443, error: "" }] })).toMatch(/^listenersDown\[0\]\.error: /);
    expect(errorOf({ ...down, listenersDown: [{ inboundId: id, port: 443, error: "x", extra: 1 }] })).toBe("listenersDown[0].extra: unknown field");
    expect(errorOf({ ...down, listenersDown: [down.listenersDown[0], { inboundId: id, port: 8443, error: "x" }] })).toBe("listenersDown[1].inboundId: duplicate of listenersDown[0]: one row per inbound");
    expect(errorOf({ ...down, listenerAlive: true })).toBe("listenersDown: a listener is down, yet listenerAlive is true");
  });

  it("rejects non-finite numbers", () => {
    expect(errorOf({ ...good(), rxBps: Infinity })).toMatch(/^rxBps: expected finite number/);
    expect(errorOf({ ...good(), cpu: NaN })).toMatch(/^cpu: expected/);
  });

  it("validates neighbours", () => {
    const n = (x: object) => ({ ...good(), neighbours: [{ serverId: randomUUID(), ok: true, rttMs: 1 }, x] });
    expect(errorOf(n({ serverId: "srv-1", ok: true, rttMs: 1 }))).toBe("neighbours[1].serverId: expected a UUID");
    expect(errorOf(n({ serverId: randomUUID(), ok: true, rttMs: -1 }))).toBe("neighbours[1].rttMs: expected number ≥ 0");
    expect(errorOf(n({ serverId: randomUUID(), ok: true, rttMs: 1, x: 1 }))).toBe("neighbours[1].x: unknown field");
    expect(errorOf(n({ serverId: randomUUID(), ok: true }))).toMatch(/^neighbours\[1\]\.rttMs: expected/);
    const many = Array.from({ length: 1001 }, () => ({ serverId: randomUUID(), ok: true, rttMs: 1 }));
    expect(errorOf({ ...good(), neighbours: many })).toBe("neighbours: expected at most 1000 items");
  });

  it("formatZodError tolerates non-zod errors", () => {
    expect(formatZodError(new Error("boom"))).toBe("boom");
    expect(formatZodError(undefined)).toBe("invalid input");
  });
});

describe("probeConfigSchema", () => {
  it("fills the documented defaults", () => {
    expect(DEFAULT_PROBE_CONFIG).toEqual({
      protocol: "tcp",
      method: "GET",
      path: "/",
      headers: {},
      intervalS: 30,
      timeoutS: 30,
      unhealthyThreshold: 3,
      healthyThreshold: 1,
      statusCodes: "200-399",
      enabled: true,
    });
    expect(PROBE_DEFAULTS.intervalS).toBe(30);
  });

  it("refuses prototype keys as header names (a stored one made every read a 500; found by the fuzz suite)", () => {
    // zod already drops an own "__proto__" key of a record: it never reaches the config.
    const dropped = probeConfigSchema.parse({ protocol: "http", headers: JSON.parse('{"__proto__": "x", "X-A": "1"}') as Record<string, string> });
    expect(Object.keys(dropped.headers)).toEqual(["X-A"]);
    for (const name of ["constructor", "prototype", "Constructor"]) {
      const headers = JSON.parse(`{${JSON.stringify(name)}: "x"}`) as Record<string, string>;
      const r = probeConfigSchema.safeParse({ protocol: "http", headers });
      expect(r.success, name).toBe(false);
      expect(r.error?.issues[0]?.path[0]).toBe("headers");
      expect(probeConfigSchema.safeParse({ protocol: "http", headerMatch: headers }).success, name).toBe(false);
    }
  });

  it("accepts a full HTTP probe", () => {
    const cfg = probeConfigSchema.parse({
      protocol: "https",
      port: 8443,
      method: "POST",
      path: "/health?deep=1",
      hostHeader: "example.com:8443",
      headers: { "X-Probe": "routeboard", Accept: "text/plain" },
      payload: '{"ping":1}',
      intervalS: 5,
      timeoutS: 2,
      unhealthyThreshold: 5,
      healthyThreshold: 2,
      statusCodes: "200,204,300-308",
      headerMatch: { "Content-Type": "text/plain" },
      bodyContains: "ok",
      enabled: false,
    });
    expect(cfg.port).toBe(8443);
    expect(cfg.enabled).toBe(false);
  });

  it.each([
    [{ protocol: "udp" }, /^protocol: expected one of tcp, http, https/],
    [{ port: 0 }, /^port: expected number ≥ 1/],
    [{ port: 65536 }, /^port: expected number ≤ 65535/],
    [{ method: "DELETE" }, /^method: expected one of/],
    [{ path: "health" }, /^path: Path must start with \//],
    [{ path: "/a b" }, /^path: .*spaces/],
    [{ headers: { "Bad Name": "x" } }, /^headers\.Bad Name: invalid key: header names/],
    [{ headers: { Host: "x" } }, /^headers\.Host: invalid key: .*hostHeader/],
    [{ headers: { "content-length": "1" } }, /^headers\.content-length: invalid key/],
    [{ headers: { a: "x\r\nInjected: 1" } }, /^headers\.a: header values must not contain line breaks/],
    [{ hostHeader: "a b" }, /^hostHeader: /],
    [{ intervalS: 0 }, /^intervalS: expected number ≥ 1/],
    [{ intervalS: 3601 }, /^intervalS: expected number ≤ 3600/],
    [{ timeoutS: 0 }, /^timeoutS: expected number ≥ 1/],
    [{ unhealthyThreshold: 0 }, /^unhealthyThreshold: expected number ≥ 1/],
    [{ healthyThreshold: 101 }, /^healthyThreshold: expected number ≤ 100/],
    [{ statusCodes: "399-200" }, /^statusCodes: Status codes: range 399-200 is reversed/],
    [{ statusCodes: "abc" }, /^statusCodes: Status codes: "abc" is not a status code/],
    [{ bodyContains: "x".repeat(4091) }, /^bodyContains: expected at most 4090 characters/],
    [{ bogus: 1 }, /^bogus: unknown field/],
  ])("rejects %j", (input, re) => {
    const r = probeConfigSchema.safeParse(input);
    expect(r.success).toBe(false);
    if (!r.success) expect(formatZodError(r.error)).toMatch(re);
  });

  it("accepts bodyContains of exactly 4090 characters", () => {
    expect(probeConfigSchema.safeParse({ bodyContains: "x".repeat(4090) }).success).toBe(true);
  });
});

describe("effectiveProbeConfig and safeMergeProbeConfig", () => {
  it("merge the same way as mergeProbeConfig", () => {
    const cluster = probeConfigSchema.parse({ protocol: "http", path: "/health", headers: { A: "1" } });
    const override = { port: 8080, path: undefined, headers: { B: "2" } };
    expect(effectiveProbeConfig(cluster, override)).toEqual(mergeProbeConfig(cluster, override));
    const safe = safeMergeProbeConfig(cluster, override);
    expect(safe.success && safe.data).toEqual(mergeProbeConfig(cluster, override));
  });

  it("an undefined override field inherits the cluster's value, not the default", () => {
    const cluster = probeConfigSchema.parse({ intervalS: 7 });
    const safe = safeMergeProbeConfig(cluster, { intervalS: undefined, port: 9000 });
    expect(safe.success && safe.data.intervalS).toBe(7);
  });

  it("safeMergeProbeConfig reports an invalid combination instead of throwing", () => {
    const r = safeMergeProbeConfig(DEFAULT_PROBE_CONFIG, { intervalS: 0 } as never);
    expect(r.success).toBe(false);
  });

  it("effectiveProbeConfig falls back to the cluster's config, then to the defaults", () => {
    expect(effectiveProbeConfig({ intervalS: 9 }, { intervalS: -1 }).intervalS).toBe(9);
    expect(effectiveProbeConfig({ intervalS: -1 }, { port: 8080 })).toEqual(DEFAULT_PROBE_CONFIG);
    expect(effectiveProbeConfig("garbage", null)).toEqual(DEFAULT_PROBE_CONFIG);
    expect(effectiveProbeConfig(null, undefined)).toEqual(DEFAULT_PROBE_CONFIG);
  });
});

describe("mergeProbeConfig", () => {
  it("applies only the defined override fields", () => {
    const cluster = probeConfigSchema.parse({ protocol: "http", path: "/health", headers: { A: "1" } });
    const merged = mergeProbeConfig(cluster, { port: 8080, intervalS: 10, path: undefined });
    expect(merged).toMatchObject({ protocol: "http", path: "/health", port: 8080, intervalS: 10, headers: { A: "1" } });
  });

  it("replaces record fields as a whole", () => {
    const cluster = probeConfigSchema.parse({ headers: { A: "1", B: "2" } });
    expect(mergeProbeConfig(cluster, { headers: { C: "3" } }).headers).toEqual({ C: "3" });
  });

  it("works with no cluster config and no override", () => {
    expect(mergeProbeConfig(null, null)).toEqual(DEFAULT_PROBE_CONFIG);
    expect(mergeProbeConfig({ enabled: false })).toEqual({ ...DEFAULT_PROBE_CONFIG, enabled: false });
  });

  it("throws on invalid stored values", () => {
    expect(() => mergeProbeConfig({ intervalS: 0 } as never, {})).toThrow();
  });

  it("probeOverrideSchema accepts {} and rejects bad values", () => {
    expect(probeOverrideSchema.parse({})).toEqual({});
    expect(probeOverrideSchema.safeParse({ statusCodes: "600" }).success).toBe(false);
    expect(probeOverrideSchema.safeParse({ extra: 1 }).success).toBe(false);
  });
});

describe("probe field messages the health page shows as is", () => {
  const messageOf = (schema: typeof probeConfigSchema | typeof probeOverrideSchema, input: unknown) => {
    const r = schema.safeParse(input);
    expect(r.success).toBe(false);
    return r.success ? "" : (r.error.issues[0]?.message ?? "");
  };
  it.each([
    [{ port: 0 }, "Port must be a whole number between 1 and 65535"],
    [{ port: 70000 }, "Port must be a whole number between 1 and 65535"],
    [{ port: "abc" }, "Port must be a whole number between 1 and 65535"],
    [{ port: 1.5 }, "Port must be a whole number between 1 and 65535"],
    [{ intervalS: 0 }, "Interval must be a whole number of seconds between 1 and 3600"],
    [{ intervalS: "" }, "Interval must be a whole number of seconds between 1 and 3600"],
    [{ timeoutS: 3601 }, "Timeout must be a whole number of seconds between 1 and 3600"],
    [{ unhealthyThreshold: 0 }, "Unhealthy threshold must be a whole number of failures between 1 and 100"],
    [{ healthyThreshold: 101 }, "Healthy threshold must be a whole number of successes between 1 and 100"],
    [{ protocol: "udp" }, "Protocol must be one of tcp, http, https"],
    [{ method: "DELETE" }, "Method must be one of GET, HEAD, POST, PUT, OPTIONS"],
    [{ path: "health" }, "Path must start with /"],
    [{ hostHeader: "" }, "Host header must not be empty"],
    [{ statusCodes: "abc" }, 'Status codes: "abc" is not a status code or range (expected e.g. 200, 204 or 200-399)'],
    [{ bodyContains: "" }, "Body must contain: enter some text or leave it empty"],
    [{ enabled: "yes" }, "Probes on/off must be true or false"],
  ])("%j → %s", (input, message) => {
    expect(messageOf(probeConfigSchema, input)).toBe(message);
    expect(messageOf(probeOverrideSchema, input)).toBe(message);
  });

  it("no probe field falls back to zod's own wording", () => {
    const bad = { port: -1, intervalS: 0, timeoutS: 0, unhealthyThreshold: 0, healthyThreshold: 0, protocol: 1, method: 1, path: 1, hostHeader: 1, payload: 1, statusCodes: 1, bodyContains: 1, enabled: 1 };
    const r = probeConfigSchema.safeParse(bad);
    expect(r.success).toBe(false);
    if (r.success) return;
    expect(r.error.issues.length).toBeGreaterThanOrEqual(Object.keys(bad).length);
    for (const i of r.error.issues) expect(i.message).not.toMatch(/Too small|Too big|Invalid input|expected/);
  });
});
