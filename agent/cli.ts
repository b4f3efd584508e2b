/**
 * Command-line flags of the agent. Flags win over the environment (ROUTEBOARD_URL,
 * ROUTEBOARD_AGENT_TOKEN) so one unit file can be overridden by hand when debugging.
 */
export type CoreKind = "xray" | "v2ray";

export interface AgentOptions {
  panel: string;
  token: string;
  core: CoreKind;
  coreBin: string | null;
  stateDir: string;
  /** Overrides the config's reportIntervalS when set. */
  reportIntervalS: number | null;
  /** Port of the core's API inbound on 127.0.0.1 (moved up when an inbound uses it). */
  apiPort: number;
}

export const DEFAULT_STATE_DIR = "/var/lib/routeboard-agent";
export const DEFAULT_API_PORT = 10085;

export const USAGE = `Usage: routeboard-agent --panel <url> --token <token> --core xray|v2ray [options]

Runs the VPN core of this server with the config the Routeboard panel hands out, and reports
health, load and per-user traffic back to the panel.

  --panel <url>           the panel's public URL (env ROUTEBOARD_URL)
  --token <token>         this server's agent token (env ROUTEBOARD_AGENT_TOKEN)
  --core xray|v2ray       the VPN core to drive: xray (VLESS with Reality, TLS, none)
                          or v2ray 4.x (VLESS with TLS or none)
  --core-bin <path>       the core's binary (default: found on PATH, then /usr/local/bin,
                          /usr/bin)
  --state-dir <dir>       where the agent keeps the last good config, the core's config and
                          undelivered traffic (default ${DEFAULT_STATE_DIR})
  --report-interval <s>   report every s seconds (1–3600) instead of the panel's interval
  --api-port <port>       port of the core's API on 127.0.0.1 (default ${DEFAULT_API_PORT})
  --help                  show this help
`;

export type ParseResult = { kind: "run"; options: AgentOptions } | { kind: "help" } | { kind: "error"; message: string };

const VALUE_FLAGS = new Set(["--panel", "--token", "--core", "--core-bin", "--state-dir", "--report-interval", "--api-port"]);

/** Parses argv (without node and script) and the environment; never exits (main does). */
export function parseArgs(argv: readonly string[], env: Record<string, string | undefined>): ParseResult {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") return { kind: "help" };
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (!VALUE_FLAGS.has(name)) return { kind: "error", message: `${arg}: unknown flag (see --help)` };
    let value: string | undefined;
    if (eq > 0 && arg.startsWith("--")) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      if (value === undefined || value.startsWith("--")) return { kind: "error", message: `${name}: needs a value` };
      i++;
    }
    values.set(name, value);
  }

  const panel = values.get("--panel") ?? env.ROUTEBOARD_URL ?? "";
  if (panel === "") return { kind: "error", message: "--panel: missing (or set ROUTEBOARD_URL): the panel's URL, e.g. https://panel.example.com" };
  let panelUrl: URL;
  try {
    panelUrl = new URL(panel);
  } catch {
    return { kind: "error", message: `--panel: "${panel}" is not a URL (expected e.g. https://panel.example.com)` };
  }
  if (panelUrl.protocol !== "http:" && panelUrl.protocol !== "https:") return { kind: "error", message: `--panel: expected an http:// or https:// URL, got ${panelUrl.protocol}` };

  const token = values.get("--token") ?? env.ROUTEBOARD_AGENT_TOKEN ?? "";
  if (token === "") return { kind: "error", message: "--token: missing (or set ROUTEBOARD_AGENT_TOKEN): copy it from the server's page in the panel" };

  const core = values.get("--core");
  if (core === undefined) return { kind: "error", message: "--core: missing: xray or v2ray" };
  if (core !== "xray" && core !== "v2ray") return { kind: "error", message: `--core: expected xray or v2ray, got "${core}"` };

  let reportIntervalS: number | null = null;
  const interval = values.get("--report-interval");
  if (interval !== undefined) {
    reportIntervalS = Number(interval);
    if (!Number.isInteger(reportIntervalS) || reportIntervalS < 1 || reportIntervalS > 3600) return { kind: "error", message: `--report-interval: expected whole seconds 1–3600, got "${interval}"` };
  }

  let apiPort = DEFAULT_API_PORT;
  const port = values.get("--api-port");
  if (port !== undefined) {
    apiPort = Number(port);
    if (!Number.isInteger(apiPort) || apiPort < 1 || apiPort > 65535) return { kind: "error", message: `--api-port: expected a port 1–65535, got "${port}"` };
  }

  const stateDir = values.get("--state-dir") ?? DEFAULT_STATE_DIR;
  if (stateDir === "") return { kind: "error", message: "--state-dir: must not be empty" };

  return {
    kind: "run",
    options: { panel: panelUrl.toString().replace(/\/+$/, ""), token, core, coreBin: values.get("--core-bin") ?? null, stateDir, reportIntervalS, apiPort },
  };
}
