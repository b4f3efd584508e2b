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
import { inboundServes, sameAgentUser, type AgentConfig, type AgentInbound, type AgentUser } from "../core/agent-wire";
import { diffSortedUsers } from "../core/config-version";
import { liveUserChanges, type CoreBinaries } from "./core-binary";
import type { Log } from "./log";
import { ClientList, type RenderOptions, type RenderedCore, type TlsFiles, type UnservedInbound } from "./render-common";
import { renderV2ray } from "./render-v2ray";
import { renderXray } from "./render-xray";
import { tcpConnect } from "./checks";
import { jsonParts, STATE_FILES, writeFileAtomic } from "./state";
import { mergeTraffic, parseV2ctlStats, parseXrayStats, planStatsChunks, statsQueryArgs, type StatsChunk, type TrafficByEmail } from "./stats";
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

/** Emails per `xray api rmu` call: they go on its command line, which the kernel caps (ARG_MAX). */
export const RMU_BATCH = 1000;
/** Stats queries at once, and tries per query (with a pause between) before it counts as failed. */
const STATS_CONCURRENCY = 2;
const STATS_TRIES = 3;
const STATS_RETRY_MS = [250, 1000];

type InboundJson = { tag: string; settings: { clients: ClientList } } & Record<string, unknown>;

function inboundsOf(json: Record<string, unknown>): InboundJson[] {
  return json.inbounds as InboundJson[];
}

/** The core config with every inbound's clients left out: configs that differ only in users have the same shape. */
export function shapeOf(json: Record<string, unknown>): string {
  return JSON.stringify({ ...json, inbounds: inboundsOf(json).map((i) => (i.settings?.clients ? { ...i, settings: { ...i.settings, clients: [] } } : i)) });
}

/** Users to remove (gone, or their id or plan changed) and to add (new, or their id or plan changed). */
export interface UsersDiff {
  remove: string[];
  add: AgentUser[];
  /** The users `remove` names, as they were: which inbounds they are on follows from their plan. */
  removedUsers: AgentUser[];
}

export function diffUsers(before: readonly AgentUser[], after: readonly AgentUser[]): UsersDiff {
  if (sortedByEmail(before) && sortedByEmail(after)) return mergeDiff(before, after);
  const old = new Map<string, AgentUser>();
  for (const u of before) old.set(u.email, u);
  const add: AgentUser[] = [];
  const changed: AgentUser[] = [];
  for (const u of after) {
    const was = old.get(u.email);
    if (was === undefined) add.push(u);
    else {
      old.delete(u.email);
      if (!sameAgentUser(was, u)) {
        changed.push(was);
        add.push(u);
      }
    }
  }
  const removedUsers = [...old.values(), ...changed];
  return { remove: removedUsers.map((u) => u.email), add, removedUsers };
}

/** Strictly ascending emails: the panel sends users ordered by subscriber id, which is the email. */
function sortedByEmail(users: readonly AgentUser[]): boolean {
  for (let k = 1; k < users.length; k++) if (!(users[k - 1]!.email < users[k]!.email)) return false;
  return true;
}

/** diffUsers of two sorted lists in one walk, without a map of a million entries. */
function mergeDiff(before: readonly AgentUser[], after: readonly AgentUser[]): UsersDiff {
  const { added, removed } = diffSortedUsers(before, after);
  return { remove: removed.map((u) => u.email), add: added, removedUsers: removed };
}

export interface UserChange {
  tag: string;
  /** Emails to remove (gone, or their id changed). */
  remove: string[];
  /** The inbound with only the clients to add: the body of `xray api adu`. */
  add: InboundJson | null;
}

/**
 * The per-inbound commands that apply a users diff to a running core whose config is `after`
 * but for its users. An inbound's clients are the config's users its plans let in
 * (render-xray.ts, core/agent-wire.ts inboundServes), so each inbound removes and adds only
 * those of the diff. `panelInbounds` are the config's inbounds, by the tag the core knows.
 */
export function planUserChanges(after: Record<string, unknown>, diff: UsersDiff, panelInbounds: readonly AgentInbound[] = []): UserChange[] {
  const byTag = new Map(panelInbounds.map((i) => [i.tag, i]));
  const changes: UserChange[] = [];
  for (const inbound of inboundsOf(after)) {
    if (!inbound.settings?.clients) continue;
    const panel = byTag.get(inbound.tag) ?? {};
    const remove = diff.removedUsers.filter((u) => inboundServes(panel, u)).map((u) => u.email);
    const add = diff.add.filter((u) => inboundServes(panel, u));
    if (remove.length === 0 && add.length === 0) continue;
    const clients = inbound.settings.clients.withUsers(add);
    changes.push({ tag: inbound.tag, remove, add: add.length > 0 ? { ...inbound, settings: { ...inbound.settings, clients } } : null });
  }
  return changes;
}

/**
 * The core config as text in parts, clients written straight from the users a slice at a
 * time: at a million users the whole text is over 100 MB, and the client objects as much.
 */
export function coreConfigParts(json: Record<string, unknown>): Generator<string> {
  return jsonParts(json, true);
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
  /** The core's version line (`xray version`): Xray before 25.7.26 cannot change users live. */
  coreVersion?: string;
  /** Bytes one stats query's reply may hold (default STATS_CHUNK_BYTES). */
  statsChunkBytes?: number;
}

export class CoreManager {
  private readonly supervisor: Supervisor;
  private current: Omit<RenderedCore, "json"> | null = null;
  /** shapeOf the running core config, and the panel inbounds its clients were rendered from. */
  private currentShape = "";
  private currentInbounds = "";
  private currentVersion: string | null = null;
  private lastError: string | null = null;
  /** The running config leaves out an inbound whose TLS files are missing: try again later. */
  private filesMissing = false;
  private pendingFilesMissing = false;
  private readonly notesLogged = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly configFile: string;
  private readonly candidateFile: string;
  /** Why users cannot be changed through the core's API (null: they can). */
  private readonly noLiveUsers: string | null;
  /** The users of the running config, and those removed live since the core started: the core keeps their counters. */
  private users: readonly AgentUser[] = [];
  private readonly removedSinceStart = new Set<string>();
  private chunkPlan: { users: readonly AgentUser[]; removed: number; chunks: StatsChunk[] } | null = null;

  constructor(private readonly opts: CoreManagerOptions) {
    this.noLiveUsers = liveUserChanges(opts.bins.kind, opts.coreVersion ?? null);
    if (this.noLiveUsers && opts.bins.kind === "xray") opts.log.warn(`${this.noLiveUsers}: every user change restarts the core, dropping every connection; upgrade Xray to get live user changes`);
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
  /** The inbounds the running config serves: what the listener check connects to. */
  get servedInbounds(): Array<{ inboundId: string; port: number }> {
    return this.current?.served.map((i) => ({ inboundId: i.id, port: i.port })) ?? [];
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
    const running = this.current !== null && this.supervisor.running;
    const shape = shapeOf(rendered.json);
    const inbounds = JSON.stringify(config.inbounds);
    // Only users differ when the core config but for its clients is the same and so are the
    // inbounds the clients are rendered from (their flow).
    const diff = running && shape === this.currentShape && inbounds === this.currentInbounds ? diffUsers(this.users, config.users) : null;
    if (diff && diff.remove.length === 0 && diff.add.length === 0) {
      // Same core config, but what it leaves out may differ (an inbound added whose files are missing).
      this.accept(rendered, config, shape, inbounds);
      return true;
    }

    writeFileAtomic(this.candidateFile, coreConfigParts(rendered.json));
    if (diff && this.noLiveUsers === null) {
      // The core runs this config but for its users, and `adu` checks the users it adds: the
      // full test (seconds at a million users) is left for changes that need a restart.
      const live = await this.applyUsersLive(planUserChanges(rendered.json, diff, config.inbounds), rendered.apiPort);
      if (live) {
        fs.renameSync(this.candidateFile, this.configFile);
        this.accept(rendered, config, shape, inbounds);
        log.info(`users updated live through Xray's API (config ${config.version}: ${diff.add.length} added, ${diff.remove.length} removed)`);
        return true;
      }
      log.warn("updating users through Xray's API failed: restarting the core instead");
    }
    const test = await run(bins.bin, coreArgs(bins.kind, this.candidateFile, true), 60_000);
    if (test.code !== 0) {
      const why = describeTestFailure(test);
      this.lastError = `the core rejected config ${config.version}: ${why}`.slice(0, 4000);
      log.error(`${this.lastError}${this.current ? " (the previous config keeps running)" : ""}`);
      fs.rmSync(this.candidateFile, { force: true });
      return false;
    }
    const wasRunning = this.supervisor.running;
    if (wasRunning) await this.opts.beforeRestart?.().catch((err: unknown) => log.warn(`could not read counters before the restart: ${(err as Error).message}`));
    fs.renameSync(this.candidateFile, this.configFile);
    this.accept(rendered, config, shape, inbounds);
    // A new core process starts with no counters.
    this.removedSinceStart.clear();
    if (wasRunning) {
      log.info(diff ? `users changed (config ${config.version}): restarting ${bins.kind} because ${this.noLiveUsers ?? "changing them live failed"}` : `config ${config.version}: inbounds changed, restarting ${bins.kind}`);
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

  private accept(rendered: RenderedCore, config: AgentConfig, shape: string, inbounds: string) {
    this.filesMissing = this.pendingFilesMissing;
    // The clients are not kept (a million objects): the users and the shape say what runs.
    const { json: _clients, ...rest } = rendered;
    this.current = rest;
    this.currentShape = shape;
    this.currentInbounds = inbounds;
    this.currentVersion = config.version;
    this.users = config.users;
    this.lastError = null;
  }

  private async applyUsersLive(plan: UserChange[], apiPort: number): Promise<boolean> {
    // A core started a moment ago may not listen on its API yet: a change arriving then waits
    // for it rather than restarting the core (and dropping every connection) for nothing.
    if (!(await apiListening(apiPort, API_READY_WAIT_MS))) return false;
    const server = `--server=127.0.0.1:${apiPort}`;
    for (const change of plan) {
      for (let k = 0; k < change.remove.length; k += RMU_BATCH) {
        const batch = change.remove.slice(k, k + RMU_BATCH);
        const r = await run(this.opts.bins.ctl, ["api", "rmu", server, `-tag=${change.tag}`, ...batch], 15_000);
        // The core keeps a removed user's counters: they are read until it restarts.
        for (const email of batch) this.removedSinceStart.add(email);
        if (r.code !== 0 || !r.stdout.includes(`Removed ${batch.length} user`)) return false;
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

  /**
   * Reads every user's counters since the previous reading (and resets them), in queries by
   * email prefix that each stay far under the API client's 4 MiB receive limit (stats.ts). A
   * query that fails is tried again; one that keeps failing is logged and the others' traffic
   * is kept. Throws when no query got an answer.
   */
  async readTraffic(): Promise<TrafficByEmail> {
    const apiPort = this.apiPort;
    if (apiPort === null || !this.supervisor.running) throw new Error("the core is not running");
    const chunks = this.statsChunks();
    const traffic: TrafficByEmail = new Map();
    const failed: Array<{ chunk: StatsChunk; error: string }> = [];
    let next = 0;
    let answered = false;
    const worker = async () => {
      // A first query that fails every try, before any answered, means the API is down: the
      // rest are not asked (their counters stay in the core for the next reading).
      while (next < chunks.length && (answered || failed.length === 0)) {
        const chunk = chunks[next++]!;
        const result = await this.queryChunk(chunk, apiPort);
        if (typeof result === "string") failed.push({ chunk, error: result });
        else {
          answered = true;
          mergeTraffic(traffic, result);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(STATS_CONCURRENCY, chunks.length) }, worker));
    if (!answered && failed.length > 0) throw new Error(`the core's API did not answer: ${failed[0]!.error}`);
    // Running and answering again: a start-up failure is over.
    if (this.lastError?.startsWith("the core exited right after start")) this.lastError = null;
    if (failed.length > 0) {
      const users = failed.reduce((n, f) => n + f.chunk.users, 0);
      const what = failed.slice(0, 5).map((f) => `${f.chunk.covers} (${f.error})`).join("; ");
      // grpc-go's "received message larger than max": the core reset what it matched before the client refused the reply.
      const overLimit = failed.some((f) => /larger than max/.test(f.error)) ? " A reply over the API client's limit means the core reset those counters: their traffic since the last reading is lost." : "";
      this.opts.log.error(
        `reading traffic counters: ${failed.length} of ${chunks.length} queries failed ${STATS_TRIES} times, covering ${users} users: ${what}${failed.length > 5 ? "; …" : ""}. ` +
          `The other queries' traffic is kept; counters the core did not reset are read next time.${overLimit}`,
      );
    }
    return traffic;
  }

  /** Users of the running config. */
  get userCount(): number {
    return this.users.length;
  }

  /**
   * Reads (and resets) only these users' counters, one exact query each (`user>>>EMAIL>>>`):
   * the limit check's reading on a server with too many users to read them all every few
   * seconds (agent.ts). Throws when no query got an answer.
   */
  async readTrafficOf(emails: readonly string[]): Promise<TrafficByEmail> {
    const apiPort = this.apiPort;
    if (apiPort === null || !this.supervisor.running) throw new Error("the core is not running");
    const traffic: TrafficByEmail = new Map();
    let next = 0;
    let answered = false;
    let lastError = "";
    const worker = async () => {
      while (next < emails.length) {
        const email = emails[next++]!;
        const result = await this.queryChunk({ pattern: `user>>>${email}>>>`, covers: `the email ${JSON.stringify(email)}`, users: 1 }, apiPort);
        if (typeof result === "string") lastError = result;
        else {
          answered = true;
          mergeTraffic(traffic, result);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(STATS_CONCURRENCY, emails.length) }, worker));
    if (!answered && emails.length > 0) throw new Error(`the core's API did not answer: ${lastError}`);
    return traffic;
  }

  /** The queries that cover every counter the core may hold (planned again when the users change). */
  private statsChunks(): StatsChunk[] {
    const plan = this.chunkPlan;
    if (plan && plan.users === this.users && plan.removed === this.removedSinceStart.size) return plan.chunks;
    const emails = this.users.map((u) => u.email);
    // Removed users the config has again are counted once: a set of the few removed, not of every user.
    const gone = new Set(this.removedSinceStart);
    if (gone.size > 0) for (const email of emails) gone.delete(email);
    for (const email of gone) emails.push(email);
    // With no users there are no user counters, but one query still tells whether the API answers.
    const chunks = emails.length > 0 ? planStatsChunks(emails, this.opts.statsChunkBytes) : [{ pattern: "user>>>", covers: "every user", users: 0 }];
    this.chunkPlan = { users: this.users, removed: this.removedSinceStart.size, chunks };
    return chunks;
  }

  /** One query, tried up to STATS_TRIES times: its traffic, or the last error. */
  private async queryChunk(chunk: StatsChunk, apiPort: number): Promise<TrafficByEmail | string> {
    const { bins, log } = this.opts;
    let error = "";
    for (let attempt = 1; attempt <= STATS_TRIES; attempt++) {
      const r = await run(bins.ctl, statsQueryArgs(bins.kind, apiPort, chunk.pattern), 10_000);
      if (r.code === 0) {
        try {
          return bins.kind === "xray" ? parseXrayStats(r.stdout) : parseV2ctlStats(r.stdout);
        } catch (err) {
          error = `unreadable answer: ${(err as Error).message}`;
        }
      } else {
        error = (r.stderr || r.stdout).trim().split("\n").slice(-1)[0] || `exit ${r.code}`;
      }
      if (attempt < STATS_TRIES) {
        log.warn(`reading the counters of ${chunk.covers} failed (try ${attempt} of ${STATS_TRIES}): ${error}; trying again`);
        await new Promise((resolve) => setTimeout(resolve, STATS_RETRY_MS[attempt - 1]));
      }
    }
    return error;
  }

  async stop(): Promise<void> {
    await this.queue;
    await this.supervisor.stop();
  }
}

/** True when nothing listens on 127.0.0.1:port (we can bind it). */
function portFree(port: number): Promise<boolean> {
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

/** How long a live user change waits for a just-started core's API to listen. */
const API_READY_WAIT_MS = 10_000;

/** True once 127.0.0.1:`port` accepts a TCP connection, tried every 100 ms for up to `waitMs`. */
async function apiListening(port: number, waitMs: number): Promise<boolean> {
  const deadline = performance.now() + waitMs;
  for (;;) {
    if ((await tcpConnect("127.0.0.1", port, 1000)).ok) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}
