/**
 * The pure parts of npm run bench:scale (scripts/bench-scale.ts): its flags, with errors that
 * name the flag, and the figures it prints (percentiles, aims).
 */

export interface ScaleOptions {
  subscribers: number;
  agents: number;
  /** Users online at once, spread evenly over the agents (each reports its share). */
  online: number;
  changesPerS: number;
  durationS: number;
  /** PostgreSQL (a throwaway server of the harness's) or PGlite. */
  database: "postgres" | "pglite";
  /** The app's port (default: a free one). */
  port: number | null;
  /** The throwaway PostgreSQL server's port (default: a free one). */
  pgPort: number | null;
}

export const FULL: ScaleOptions = { subscribers: 1_000_000, agents: 1000, online: 100_000, changesPerS: 10, durationS: 60, database: "postgres", port: null, pgPort: null };
export const QUICK: ScaleOptions = { ...FULL, subscribers: 100_000, agents: 200, online: 20_000, database: "pglite" };

export const USAGE = `npm run bench:scale -- [--quick] [--subscribers N] [--agents N] [--online N] [--changes-per-s N] [--duration-s N] [--pglite | --postgres] [--port N] [--pg-port N]
  default: 1,000,000 subscribers, 1,000 agents, 100,000 online, 10 changes/s for 60 s, on PostgreSQL
  --quick: 100,000 subscribers, 200 agents, 20,000 online, on PGlite (later flags override)`;

const INTEGER_FLAGS = {
  "--subscribers": { key: "subscribers", min: 1, max: 10_000_000 },
  "--agents": { key: "agents", min: 1, max: 1000 },
  "--online": { key: "online", min: 0, max: 10_000_000 },
  "--changes-per-s": { key: "changesPerS", min: 1, max: 100 },
  "--duration-s": { key: "durationS", min: 1, max: 3600 },
  "--port": { key: "port", min: 1, max: 65535 },
  "--pg-port": { key: "pgPort", min: 1, max: 65535 },
} as const;

/** The options `argv` asks for, or an error naming the flag at fault. */
export function parseScaleArgs(argv: readonly string[]): ScaleOptions | { error: string } {
  const opts: ScaleOptions = { ...(argv.includes("--quick") ? QUICK : FULL) };
  for (let k = 0; k < argv.length; k++) {
    const flag = argv[k]!;
    if (flag === "--quick") continue;
    if (flag === "--pglite" || flag === "--postgres") {
      opts.database = flag === "--pglite" ? "pglite" : "postgres";
      continue;
    }
    const spec = INTEGER_FLAGS[flag as keyof typeof INTEGER_FLAGS];
    if (!spec) return { error: `unknown flag ${flag}\n${USAGE}` };
    const raw = argv[++k];
    if (raw === undefined) return { error: `${flag}: expected a whole number after it` };
    const text = raw.replaceAll("_", "").replaceAll(",", "");
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < spec.min || value > spec.max) return { error: `${flag}: expected a whole number from ${spec.min} to ${spec.max}, got ${JSON.stringify(raw)}` };
    opts[spec.key] = value;
  }
  if (opts.online > opts.subscribers) return { error: `--online: ${opts.online} is more than the ${opts.subscribers} subscribers` };
  return opts;
}

/** The p-th percentile (nearest rank) of `xs`; NaN when empty. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Which users agent `k` of `agents` reports: a contiguous share of `online`, as even as can be. */
export function onlineShare(k: number, agents: number, online: number): { from: number; to: number } {
  return { from: Math.floor((k * online) / agents), to: Math.floor(((k + 1) * online) / agents) };
}

export interface ScaleFigures {
  propagation: { p50Ms: number; p99Ms: number };
  bytesPerAgentPerChange: number;
  foldLagS: number;
  healthP99Ms: number;
  panelRssMb: number;
}

/** The aims (issue 23, point 5), each met or not; a figure that is NaN (never measured) is not met. */
export function aims(f: ScaleFigures): Record<string, { aim: string; met: boolean }> {
  return {
    propagation: { aim: "a change reaches every agent, p99 < 2000 ms", met: f.propagation.p99Ms < 2000 },
    bytesPerAgentPerChange: { aim: "< 2048 bytes per agent for a one-subscriber change", met: f.bytesPerAgentPerChange < 2048 },
    foldLagS: { aim: "every minute's reports folded within 5 s", met: f.foldLagS <= 5 },
    healthP99Ms: { aim: "/api/health p99 < 100 ms", met: f.healthP99Ms < 100 },
    panelRssMb: { aim: "panel RSS < 2048 MB", met: f.panelRssMb < 2048 },
  };
}
