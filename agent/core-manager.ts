/**
 * Drives one core: renders the panel's config, has the core test it, swaps it in atomically
 * and (re)starts the core, or, for Xray when only users changed, adds and removes them live
 * through HandlerService so other users keep their connections. A config the core rejects
 * never replaces the running one: the error is kept for the next report's configError.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { AgentConfig } from "../core/agent-wire";
import type { CoreBinaries } from "./core-binary";
import type { Log } from "./log";
import type { RenderOptions, RenderedCore, TlsFiles, UnservedInbound } from "./render-common";
import { renderV2ray } from "./render-v2ray";
import { renderXray } from "./render-xray";
import { STATE_FILES, writeFileAtomic } from "./state";
import { parseV2ctlStats, parseXrayStats, type TrafficByEmail } from "./stats";
import { Supervisor, type ExitInfo } from "./supervisor";

export interface RunResult {
  stdout: string;
  stderr: string;
  code: number;
}

export function run(bin: string, args: string[], timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(bin, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : -1) : 0;
      resolve({ stdout: String(stdout), stderr: String(stderr) || (err && code === -1 ? err.message : ""), code });
    });
  });
}

export function render(kind: CoreBinaries["kind"], config: AgentConfig, apiPort: number, extra: Omit<RenderOptions, "apiPort"> = {}): RenderedCore {
  const options = { apiPort, ...extra };
  return kind === "xray" ? renderXray(config, options) : renderV2ray(config, options);
}

/** Every address of this host's network interfaces: the server's own, kept from subscribers. */
export function interfaceAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) out.push(a.address);
  return out;
}

/**
 * Why a TLS inbound's files cannot be used, or null. The core reads them when it loads the
 * config and refuses the whole config if one is missing, which would block every user change
 * on the server (removing expired users included): such an inbound is left out instead.
 */
export function tlsFileProblem(files: TlsFiles): string | null {
  for (const [what, file] of [["certificate", files.certificateFile], ["key", files.keyFile]] as const) {
    try {
      if (!fs.statSync(file).isFile()) return `the TLS ${what} ${file} is not a file`;
      fs.accessSync(file, fs.constants.R_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === "ENOENT" ? "does not exist" : code === "EACCES" ? "is not readable by the agent's user" : `cannot be read (${code ?? (err as Error).message})`;
      return `the TLS ${what} file ${file} ${why} on this server: put it there or fix the path on the inbound`;
    }
  }
  return null;
}

/** Arguments of the core's config test and of its normal run. */
export function coreArgs(kind: CoreBinaries["kind"], file: string, test: boolean): string[] {
  if (kind === "xray") return test ? ["run", "-test", "-c", file] : ["run", "-c", file];
  return test ? ["-test", "-config", file] : ["-config", file];
}

/** The command that reads (and resets) every user counter. */
export function statsArgs(kind: CoreBinaries["kind"], apiPort: number): string[] {
  const server = `--server=127.0.0.1:${apiPort}`;
  return kind === "xray" ? ["api", "statsquery", server, "-pattern", "user>>>", "-reset"] : ["api", server, "StatsService.QueryStats", 'pattern: "user>>>" reset: true'];
}

interface Client {
  id: string;
  email: string;
}
type InboundJson = { tag: string; settings: { clients: Client[] } } & Record<string, unknown>;

function inboundsOf(json: Record<string, unknown>): InboundJson[] {
  return json.inbounds as InboundJson[];
}

function withoutClients(json: Record<string, unknown>): string {
  return JSON.stringify({ ...json, inbounds: inboundsOf(json).map((i) => (i.settings?.clients ? { ...i, settings: { ...i.settings, clients: [] } } : i)) });
}

export interface UserChange {
  tag: string;
  /** Emails to remove (gone, or their id changed). */
  remove: string[];
  /** The inbound with only the clients to add: the body of `xray api adu`. */
  add: InboundJson | null;
}

/**
 * When two rendered configs differ only in their users, the per-inbound changes that turn the
 * old one into the new one; null when anything else differs (then the core restarts).
 */
export function planUserChanges(before: Record<string, unknown>, after: Record<string, unknown>): UserChange[] | null {
  if (withoutClients(before) !== withoutClients(after)) return null;
  const oldByTag = new Map(inboundsOf(before).map((i) => [i.tag, i]));
  const changes: UserChange[] = [];
  for (const inbound of inboundsOf(after)) {
    if (!inbound.settings?.clients) continue;
    const old = new Map((oldByTag.get(inbound.tag)?.settings.clients ?? []).map((c) => [c.email, c]));
    const now = new Map(inbound.settings.clients.map((c) => [c.email, c]));
    const remove = [...old.values()].filter((c) => JSON.stringify(now.get(c.email)) !== JSON.stringify(c)).map((c) => c.email);
    const added = [...now.values()].filter((c) => JSON.stringify(old.get(c.email)) !== JSON.stringify(c));
    if (remove.length === 0 && added.length === 0) continue;
    changes.push({ tag: inbound.tag, remove, add: added.length > 0 ? { ...inbound, settings: { ...inbound.settings, clients: added } } : null });
  }
  return changes;
}

export interface CoreManagerOptions {
  bins: CoreBinaries;
  stateDir: string;
  apiPort: number;
  log: Log;
  /** The core died on its own (not a deliberate restart): report out of schedule. */
  onCoreExit?: (info: ExitInfo) => void;
  /** Called before a deliberate restart: counters live in the core's memory, read them first. */
  beforeRestart?: () => Promise<void>;
  supervisor?: { minBackoffMs?: number; maxBackoffMs?: number; stableMs?: number };
  /** The server's own addresses (default: its network interfaces', read at every render). */
  localAddresses?: () => string[];
}

export class CoreManager {
  private readonly supervisor: Supervisor;
  private current: RenderedCore | null = null;
  private currentVersion: string | null = null;
  private lastError: string | null = null;
  /** The running config leaves out an inbound whose TLS files are missing: try again later. */
  private filesMissing = false;
  private pendingFilesMissing = false;
  private readonly notesLogged = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly configFile: string;
  private readonly candidateFile: string;

  constructor(private readonly opts: CoreManagerOptions) {
    this.configFile = path.join(opts.stateDir, STATE_FILES.coreConfig);
    this.candidateFile = path.join(opts.stateDir, STATE_FILES.coreCandidate);
    this.supervisor = new Supervisor({
      bin: opts.bins.bin,
      args: coreArgs(opts.bins.kind, this.configFile, false),
      log: opts.log,
      onExit: (info) => {
        // A core that dies right after start with a config its test mode passed (a port in
        // use, a key it cannot read at run time) is as bad as a rejected config: say why.
        if (info.ranMs < 5000) {
          const why = describeTestFailure({ stdout: info.lastLines.join("\n"), stderr: "", code: info.code ?? -1 });
          this.lastError = `the core exited right after start with config ${this.currentVersion ?? "?"}: ${why}`.slice(0, 4000);
        }
        opts.onCoreExit?.(info);
      },
      // The core's pid in the state dir: operators and tests can find (and signal) the core.
      onPid: (pid) => {
        const file = path.join(opts.stateDir, STATE_FILES.corePid);
        try {
          if (pid === null) fs.rmSync(file, { force: true });
          else {
            writeFileAtomic(file, `${pid}\n`, 0o644);
            opts.log.info(`${opts.bins.kind} runs as pid ${pid}`);
          }
        } catch {
          // the pid file is a convenience: never fail the core over it
        }
      },
      ...opts.supervisor,
    });
  }

  get kind() {
    return this.opts.bins.kind;
  }
  /** The version of the panel config the core runs, null before the first one. */
  get runningVersion(): string | null {
    return this.currentVersion;
  }
  /** Why the newest config was rejected; null when the newest config runs. */
  get configError(): string | null {
    return this.lastError;
  }
  /** True while an inbound is left out for its TLS files: re-apply the config to pick them up. */
  get awaitingFiles(): boolean {
    return this.filesMissing;
  }
  get unserved(): UnservedInbound[] {
    return this.current?.unserved ?? [];
  }
  get servedPorts(): number[] {
    return this.current?.served.map((i) => i.port) ?? [];
  }
  get apiPort(): number | null {
    return this.current?.apiPort ?? null;
  }
  get running(): boolean {
    return this.supervisor.running;
  }
  get pid(): number | undefined {
    return this.supervisor.pid;
  }

  /** Applies a panel config; resolves true when it runs now, false when the core rejected it. */
  apply(config: AgentConfig): Promise<boolean> {
    // Never rejects: a failure to write or run anything is a rejected config, kept and reported.
    const next = this.queue.then(() =>
      this.applyNow(config).catch((err: unknown) => {
        this.lastError = `could not apply config ${config.version}: ${(err as Error).message}`.slice(0, 4000);
        this.opts.log.error(this.lastError);
        return false;
      }),
    );
    this.queue = next.catch(() => {});
    return next;
  }

  private async applyNow(config: AgentConfig): Promise<boolean> {
    const { log, bins } = this.opts;
    const rendered = await this.renderWithApiPort(config);
    for (const note of rendered.notes) {
      if (this.notesLogged.has(note)) continue;
      this.notesLogged.add(note);
      log.warn(note);
    }
    if (this.current && this.supervisor.running && JSON.stringify(this.current.json) === JSON.stringify(rendered.json)) {
      // Same core config, but what it leaves out may differ (an inbound added whose files are missing).
      this.accept(rendered, config.version);
      return true;
    }

    writeFileAtomic(this.candidateFile, JSON.stringify(rendered.json, null, 2) + "\n");
    const test = await run(bins.bin, coreArgs(bins.kind, this.candidateFile, true), 30_000);
    if (test.code !== 0) {
      const why = describeTestFailure(test);
      this.lastError = `the core rejected config ${config.version}: ${why}`.slice(0, 4000);
      log.error(`${this.lastError}${this.current ? " (the previous config keeps running)" : ""}`);
      fs.rmSync(this.candidateFile, { force: true });
      return false;
    }

    const plan = this.current && this.supervisor.running ? planUserChanges(this.current.json, rendered.json) : null;
    if (plan && bins.kind === "xray") {
      const live = await this.applyUsersLive(plan, rendered.apiPort);
      if (live) {
        fs.renameSync(this.candidateFile, this.configFile);
        this.accept(rendered, config.version);
        log.info(`users updated live through Xray's API (config ${config.version})`);
        return true;
      }
      log.warn("updating users through Xray's API failed: restarting the core instead");
    }
    const wasRunning = this.supervisor.running;
    if (wasRunning) await this.opts.beforeRestart?.().catch((err: unknown) => log.warn(`could not read counters before the restart: ${(err as Error).message}`));
    fs.renameSync(this.candidateFile, this.configFile);
    this.accept(rendered, config.version);
    if (wasRunning) {
      log.info(plan ? `users changed (config ${config.version}): restarting ${bins.kind} because it cannot add VLESS users live` : `config ${config.version}: inbounds changed, restarting ${bins.kind}`);
      await this.supervisor.restart();
    } else {
      log.info(`starting ${bins.kind} with config ${config.version}`);
      this.supervisor.start();
    }
    return true;
  }

  /**
   * A running core keeps its API port (it holds it). A core about to start gets the preferred
   * port unless something else listens there (another agent's core on the same host, say):
   * then the next free one, so the core does not die on "address already in use".
   */
  private async renderWithApiPort(config: AgentConfig): Promise<RenderedCore> {
    const running = this.current !== null && this.supervisor.running;
    let missing = false;
    const extra = {
      localAddresses: (this.opts.localAddresses ?? interfaceAddresses)(),
      tlsFileProblem: (files: TlsFiles) => {
        const problem = tlsFileProblem(files);
        if (problem) missing = true;
        return problem;
      },
    };
    let rendered = render(this.opts.bins.kind, config, running ? this.current!.apiPort : this.opts.apiPort, extra);
    this.pendingFilesMissing = missing;
    if (running) return rendered;
    for (let tries = 0; tries < 100 && !(await portFree(rendered.apiPort)); tries++) {
      rendered = render(this.opts.bins.kind, config, rendered.apiPort >= 65535 ? 1024 : rendered.apiPort + 1, extra);
    }
    if (rendered.apiPort !== this.opts.apiPort && this.current?.apiPort !== rendered.apiPort) this.opts.log.info(`the core's API listens on 127.0.0.1:${rendered.apiPort} (${this.opts.apiPort} is taken)`);
    return rendered;
  }

  private accept(rendered: RenderedCore, version: string) {
    this.filesMissing = this.pendingFilesMissing;
    this.current = rendered;
    this.currentVersion = version;
    this.lastError = null;
  }

  private async applyUsersLive(plan: UserChange[], apiPort: number): Promise<boolean> {
    const server = `--server=127.0.0.1:${apiPort}`;
    for (const change of plan) {
      if (change.remove.length > 0) {
        const r = await run(this.opts.bins.ctl, ["api", "rmu", server, `-tag=${change.tag}`, ...change.remove], 15_000);
        if (r.code !== 0 || !r.stdout.includes(`Removed ${change.remove.length} user`)) return false;
      }
      if (change.add) {
        const file = path.join(this.opts.stateDir, `adu-${change.tag}.json`);
        writeFileAtomic(file, JSON.stringify({ inbounds: [change.add] }));
        const r = await run(this.opts.bins.ctl, ["api", "adu", server, file], 15_000);
        fs.rmSync(file, { force: true });
        if (r.code !== 0 || !r.stdout.includes(`Added ${change.add.settings.clients.length} user`)) return false;
      }
    }
    return true;
  }

  /** Reads every user's counters since the previous reading (and resets them). Throws when the API does not answer. */
  async readTraffic(): Promise<TrafficByEmail> {
    const apiPort = this.apiPort;
    if (apiPort === null || !this.supervisor.running) throw new Error("the core is not running");
    const r = await run(this.opts.bins.ctl, statsArgs(this.opts.bins.kind, apiPort), 10_000);
    if (r.code !== 0) throw new Error(`the core's API did not answer: ${(r.stderr || r.stdout).trim().split("\n").slice(-1)[0] ?? `exit ${r.code}`}`);
    // Running and answering again: a start-up failure is over.
    if (this.lastError?.startsWith("the core exited right after start")) this.lastError = null;
    return this.opts.bins.kind === "xray" ? parseXrayStats(r.stdout) : parseV2ctlStats(r.stdout);
  }

  async stop(): Promise<void> {
    await this.queue;
    await this.supervisor.stop();
  }
}

/** True when nothing listens on 127.0.0.1:port (we can bind it). */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** The lines of a failed test run that say why (core banners and info lines left out). */
export function describeTestFailure(r: RunResult): string {
  const lines = `${r.stdout}\n${r.stderr}`
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !/^(V2Ray|Xray) \d/.test(l) && !/^A unified platform/.test(l) && !/\[Info\]/.test(l));
  return lines.join(" ").slice(0, 3000) || `exit code ${r.code}`;
}
