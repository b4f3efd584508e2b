/**
 * The agent's runtime: keeps the core on the panel's newest config (long-poll), reports
 * health, load and per-user traffic every interval, and sends a heartbeat every few seconds
 * carrying the load measured every LOAD_INTERVAL_S. Lives through the panel being away: the
 * core keeps the last good config (also kept on disk for the next start) and traffic waits in
 * the delivery buffer until the panel acknowledges it.
 */
import fs from "node:fs";
import path from "node:path";
import { ackLimitsSchema, MAX_BPS, type AgentConfig, type AgentReport, type HeartbeatLoad, type UserRemaining } from "../core/agent-wire";
import { HEARTBEAT_INTERVAL_S, LOAD_INTERVAL_S } from "../core/heartbeat";
import { checkListeners, checkNeighbours, checkTimeoutMs } from "./checks";
import { checkConfig, readConfigBody } from "./config-stream";
import type { CoreManager } from "./core-manager";
import type { Delivery } from "./delivery";
import type { Log } from "./log";
import { UNAUTHORIZED_MESSAGE, type PanelClient } from "./panel";
import { readJson, STATE_FILES, writeJsonAtomic } from "./state";
import { z } from "zod";
import { listedIn, UserLimits } from "./limits";
import type { TrafficByEmail } from "./stats";
import { SystemSampler } from "./system";

/** What a report measures (Agent.measure); the rest of it is the batch and the core's state. */
type Measurement = Pick<AgentReport, "listenerAlive" | "serviceRunning" | "usersOnline" | "rxBps" | "txBps" | "cpu" | "memory" | "neighbours" | "listenersDown">;

/** Long-poll wait: under the panel's 60 s cap and common proxies' 60 s idle timeouts. */
export const CONFIG_WAIT_S = 50;
/** Interval before the first config arrives (no panel, no saved config). */
const DEFAULT_REPORT_INTERVAL_S = 30;
/**
 * How often counters are read between reports once the panel sends limits (issue 25 point 8):
 * a user is removed within about this long of passing the limit, well under the 5 s aim.
 */
export const LIMIT_CHECK_MS = 2000;
/**
 * Reports sent early to learn a newly active user's limit: at most one per this long, and a
 * quarter of the report interval when that is longer. Each replaces the next scheduled
 * report, since the panel refills one report per interval (bursts of 5).
 */
const LIMIT_REPORT_GAP_MS = 5000;
/**
 * Up to this many users in the config, the limit check reads every counter (one query of
 * the chunks stats.ts plans): it also finds newly active users whose limit is unknown. Above
 * it, only the limited users closest to their limit, one exact query each, at most
 * LIMIT_WATCH_MAX per check; newly active users are then learnt from the next report.
 */
export const LIMIT_FULL_READ_MAX_USERS = 20_000;
export const LIMIT_WATCH_MAX = 100;

/**
 * Load intervals per load sample for a config of `users`: 1 up to LIMIT_FULL_READ_MAX_USERS,
 * then one more per as many users (100,000 users: every 5th interval, 50 s).
 */
export function loadStride(users: number): number {
  return Number.isFinite(users) && users > LIMIT_FULL_READ_MAX_USERS ? Math.ceil(users / LIMIT_FULL_READ_MAX_USERS) : 1;
}

const savedLimitsSchema = z.object({
  limited: z.array(z.tuple([z.string().min(1).max(128), z.int().min(0)])),
  over: z.array(z.string().min(1).max(128)),
});

export interface AgentDeps {
  panel: PanelClient;
  core: CoreManager;
  delivery: Delivery;
  log: Log;
  stateDir: string;
  coreVersion: string;
  agentVersion: string;
  reportIntervalOverrideS: number | null;
  configWaitS?: number;
  /** Error backoff of the config loop (default 1 s doubling to 10 s; a report that gets through ends it). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Heartbeat interval (default HEARTBEAT_INTERVAL_S); 0 = no heartbeats. */
  heartbeatIntervalS?: number;
  /** Counter reads between reports for limits (default LIMIT_CHECK_MS). */
  limitCheckMs?: number;
  /** How often the load sent in heartbeats is measured (default LOAD_INTERVAL_S); 0 = never (heartbeats go without it). */
  loadIntervalS?: number;
  /** The clock of the load window (tests set the window's length); default Date.now. */
  now?: () => number;
}

export class FatalError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export class Agent {
  private config: AgentConfig | null = null;
  private stopped = false;
  private readonly abort = new AbortController();
  private reportTimer: NodeJS.Timeout | null = null;
  private reporting: Promise<void> | null = null;
  private reportAgain = false;
  /** The core exited on its own since the last report was built (see coreExited). */
  private coreExitedSinceReport = false;
  private retryAt = 0;
  private lastTrafficAt = Date.now();
  /** The last report's measured part, repeated by a follow-up sent right after it (reportOnce). */
  private lastMeasurement: Measurement | null = null;
  private pendingTraffic: TrafficByEmail = new Map();
  private readonly sampler = new SystemSampler();
  private fatal: ((err: FatalError) => void) | null = null;
  private configLoopDone: Promise<void> = Promise.resolve();
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private heartbeating: Promise<void> | null = null;
  /** Ends the config loop's error backoff early. */
  private wakeConfigLoop: (() => void) | null = null;
  /**
   * Which ways of talking to the panel are failing now. "cannot reach the panel" is logged
   * when the first one fails and "reconnected to the panel" when the last one answers again,
   * each once per outage: a panel that is away for an hour does not fill the journal, and a
   * line saying it is unreachable never follows the one saying it is back.
   */
  private readonly panelFailing = new Set<"config" | "report">();
  /** Traffic limits enforced here between reports (limits.ts). */
  readonly limits = new UserLimits();
  private limitTimer: NodeJS.Timeout | null = null;
  private limitCheck: Promise<void> | null = null;
  private lastLimitReportAt = 0;
  /** Counter reads made for limits (tests count reads, not seconds). */
  limitReads = 0;
  private loadTimer: NodeJS.Timeout | null = null;
  private loadSampling: Promise<void> | null = null;
  /**
   * What every read of the counters (takeTraffic: the load timer's, reports', the limit
   * check's, before a restart) found since the last load sample: a report reading in the
   * middle of a window takes its traffic out of the core, not out of the window. Null while
   * no load is measured (its set of emails would only grow).
   */
  private loadWindow: { startMs: number; emails: Set<string>; up: number; down: number } | null = null;
  /** The newest load sample, sent once by the next heartbeat. */
  private pendingLoad: HeartbeatLoad | null = null;
  /** The load timer's reads are failing: said once when they start failing, once when they work again. */
  private loadReadFailing = false;
  /** Load timer ticks, and the samples they took (tests wait on ticks, not seconds). */
  loadTicks = 0;
  private ticksSinceSample = 0;
  loadSamples = 0;

  constructor(private readonly deps: AgentDeps) {}

  get reportIntervalS(): number {
    return this.deps.reportIntervalOverrideS ?? this.config?.reportIntervalS ?? DEFAULT_REPORT_INTERVAL_S;
  }

  /** Runs until stop() (resolves) or a fatal refusal such as a bad token (rejects with FatalError). */
  async run(): Promise<void> {
    const fatal = new Promise<never>((_, reject) => {
      this.fatal = (err) => reject(err);
    });
    fatal.catch(() => {});
    this.loadLimits();
    await this.startFromSavedConfig();
    this.configLoopDone = this.configLoop();
    // The first report goes out at once: until it arrives a new server waits for its first
    // check (and the core coming up sends another one, see applyConfig).
    this.reportSoon();
    this.heartbeat();
    this.startLoadTimer();
    this.scheduleLimitCheck();
    await Promise.race([this.configLoopDone, fatal]);
  }

  /**
   * Called when the core died on its own: the panel should know now, not at the next interval.
   * The next report says it was down even if the supervisor restarted it while that report
   * was being built (reading the counters can outlast the restart's backoff).
   */
  coreExited(): void {
    if (this.stopped) return;
    this.coreExitedSinceReport = true;
    this.reportSoon();
  }

  /** Reads the core's counters into the delivery buffer (before a restart or stop loses them). */
  async drainCounters(): Promise<void> {
    const traffic = await this.deps.core.readTraffic();
    this.takeTraffic(traffic);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort();
    if (this.reportTimer) clearTimeout(this.reportTimer);
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    if (this.limitTimer) clearTimeout(this.limitTimer);
    this.stopLoadTimer();
    await this.limitCheck?.catch(() => {});
    await this.loadSampling?.catch(() => {});
    await this.heartbeating?.catch(() => {});
    await this.reporting?.catch(() => {});
    await this.drainCounters().catch(() => {});
    await this.deps.core.stop();
    await this.configLoopDone.catch(() => {});
  }

  private get heartbeatIntervalS(): number {
    return this.deps.heartbeatIntervalS ?? HEARTBEAT_INTERVAL_S;
  }

  /**
   * One tiny POST every heartbeat interval, on its own timer: the panel takes this server out
   * of rotation within seconds when they stop and a fast probe confirms (core/heartbeat.ts).
   * It carries the newest load sample, if one came since the last heartbeat, so the balancer
   * sees a burst within LOAD_INTERVAL_S. A panel that predates heartbeats (404) is not asked
   * again until the agent restarts.
   */
  private heartbeat(): void {
    const intervalS = this.heartbeatIntervalS;
    if (this.stopped || !(intervalS > 0)) return;
    const startedAt = Date.now();
    // Sent once, whatever the answer: a heartbeat that fails drops its load rather than resend
    // it, since a newer sample comes one load interval later.
    const load = this.pendingLoad;
    this.pendingLoad = null;
    this.heartbeating = this.deps.panel.postHeartbeat(intervalS * 1000, this.abort.signal, load ? { load } : undefined).then((answer) => {
      this.heartbeating = null;
      if (this.stopped) return;
      if (typeof answer === "object" && answer.kind === "unsupported") {
        this.deps.log.info(`the panel does not take heartbeats (${answer.status}): fast failover is off for this server`);
        this.stopLoadTimer();
        return;
      }
      let wait = Math.max(0, intervalS * 1000 - (Date.now() - startedAt));
      if (typeof answer === "object") {
        // A 400/413 to a heartbeat with a load: this agent and the panel disagree on the
        // contract (a bug). Heartbeats go on without the load (failover must keep working),
        // the next one at once since the panel may not have counted this one; no more counter
        // reads for a load nobody takes.
        this.stopLoadTimer();
        this.deps.log.error(`the panel rejected a heartbeat's load (${answer.status}: ${answer.error}); heartbeats go on without it until the agent restarts. This is a bug: please report it.`);
        wait = 0;
      }
      this.heartbeatTimer = setTimeout(() => this.heartbeat(), wait);
    });
  }

  /**
   * Measures the load every load interval, on its own timer: a slow read of the counters
   * delays neither heartbeats nor reports. Off with heartbeats (nothing would carry it).
   */
  private startLoadTimer(): void {
    const intervalS = this.deps.loadIntervalS ?? LOAD_INTERVAL_S;
    if (this.stopped || !(intervalS > 0) || !(this.heartbeatIntervalS > 0)) return;
    this.loadWindow = { startMs: this.now(), emails: new Set(), up: 0, down: 0 };
    this.loadTimer = setInterval(() => {
      // A sample still reading skips this tick: the load timer never has two reads in flight.
      if (this.loadSampling || this.stopped) return;
      this.loadTicks++;
      // Past LIMIT_FULL_READ_MAX_USERS users a sample (a full read) comes every
      // loadStride() ticks, so the counters read for the load stay at about that many users
      // per load interval: a million users' counters every 10 s would cost the core and the
      // agent more than a fresher figure is worth on one server that size.
      if (++this.ticksSinceSample < loadStride(this.deps.core.userCount)) return;
      this.ticksSinceSample = 0;
      this.loadSampling = this.sampleLoad().finally(() => {
        this.loadSampling = null;
      });
    }, intervalS * 1000);
  }

  private stopLoadTimer(): void {
    if (this.loadTimer) clearInterval(this.loadTimer);
    this.loadTimer = null;
    this.loadWindow = null;
    this.pendingLoad = null;
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** Starts the load window again at `startMs`; none while the load is off (it stays off). */
  private resetLoadWindow(startMs: number): void {
    if (this.loadWindow) this.loadWindow = { startMs, emails: new Set(), up: 0, down: 0 };
  }

  /**
   * One load sample: reads the counters (delivered as any read is), then the load over the
   * window since the last sample, rates as reportOnce computes them (uplink = rx). A core that
   * is not running, or a read that fails, gives no sample and starts the window again, so the
   * next sample does not average over the outage.
   */
  private async sampleLoad(): Promise<void> {
    const { core, log } = this.deps;
    if (!core.running) {
      this.resetLoadWindow(this.now());
      return;
    }
    let traffic: TrafficByEmail;
    try {
      traffic = await core.readTraffic();
    } catch (err) {
      if (!this.loadReadFailing) log.warn(`reading traffic counters for the load failed: ${(err as Error).message} (heartbeats go without the load until a read works)`);
      this.loadReadFailing = true;
      this.resetLoadWindow(this.now());
      return;
    }
    if (this.loadReadFailing) log.info("reading traffic counters for the load works again");
    this.loadReadFailing = false;
    this.takeTraffic(traffic);
    const w = this.loadWindow;
    if (w === null) return; // the load was turned off during the read
    const now = this.now();
    const seconds = Math.max(0.001, (now - w.startMs) / 1000);
    this.pendingLoad = {
      usersOnline: w.emails.size,
      rxBps: Math.min(MAX_BPS, (w.up * 8) / seconds),
      txBps: Math.min(MAX_BPS, (w.down * 8) / seconds),
    };
    this.resetLoadWindow(now);
    this.loadSamples++;
  }

  /** The saved config, read as the panel's is (config-stream.ts): a million users are never one string. */
  private async startFromSavedConfig() {
    const file = path.join(this.deps.stateDir, STATE_FILES.lastConfig);
    let saved: Awaited<ReturnType<typeof readConfigBody>>;
    try {
      saved = await readConfigBody(fs.createReadStream(file));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      this.deps.log.warn(`${file} is unreadable (${(err as Error).message}): waiting for the panel`);
      return;
    }
    if (saved === null) {
      this.deps.log.warn(`${file} is unreadable (not JSON): waiting for the panel`);
      return;
    }
    const checked = "fields" in saved ? checkConfig(saved.fields, saved.users) : checkConfig(saved.value, undefined);
    if ("error" in checked) {
      this.deps.log.warn(`${file} is not a valid config (${checked.error}): waiting for the panel`);
      return;
    }
    this.config = checked.config;
    this.deps.log.info(`starting the core on the last good config ${checked.config.version} while the panel is asked for a newer one`);
    // Reported as soon as it runs, as after a config from the panel (see applyConfig).
    void this.deps.core.apply(this.withoutOverLimit(checked.config)).then((ok) => ok && this.reportSoon());
  }

  private async configLoop(): Promise<void> {
    const { panel, log } = this.deps;
    let backoff = this.deps.minBackoffMs ?? 1000;
    let lastInvalid = "";
    /** The newest version seen (applied or rejected by the core): long-poll for a newer one. */
    let seen: string | null = this.deps.core.runningVersion ?? this.config?.version ?? null;
    let rejected: AgentConfig | null = null;
    while (!this.stopped) {
      // A delta is asked for from the config the agent holds (the one `seen` names). After a
      // failure the first ask does not long-poll, so a panel that is back is known at once.
      const waitS = seen === null || this.panelFailing.has("config") ? 0 : (this.deps.configWaitS ?? CONFIG_WAIT_S);
      let answer = await panel.fetchConfig(seen, waitS, this.abort.signal, this.config);
      if (answer.kind === "delta-failed" && !this.stopped) {
        log.warn(`the panel's config delta does not fit (${answer.error}): fetching the full config`);
        answer = await panel.fetchConfig(null, 0, this.abort.signal);
      }
      if (this.stopped) return;
      switch (answer.kind) {
        case "unauthorized":
          this.fatal?.(new FatalError(UNAUTHORIZED_MESSAGE, 3));
          return;
        case "unchanged":
          backoff = this.deps.minBackoffMs ?? 1000;
          lastInvalid = "";
          this.panelAnswered("config");
          // The core rejected the newest config: try it again once per long-poll, so fixing
          // the server (installing the certificate, say) is picked up without a restart.
          if (rejected) {
            const retry: AgentConfig = rejected;
            rejected = null;
            if (!(await this.applyConfig(retry))) rejected = retry;
            else log.info(`config ${retry.version} runs now`);
          } else if (this.config && this.deps.core.awaitingFiles) {
            // An inbound left out for a missing certificate or key: served once the file is there.
            const before = this.deps.core.unserved.length;
            await this.applyConfig(this.config);
            if (this.deps.core.unserved.length < before) {
              log.info(`config ${this.config.version}: an inbound left out for its TLS files is served now`);
              this.reportSoon();
            }
          }
          continue;
        case "config": {
          backoff = this.deps.minBackoffMs ?? 1000;
          lastInvalid = "";
          this.panelAnswered("config");
          seen = answer.version;
          rejected = (await this.applyConfig(answer.config)) ? null : answer.config;
          continue;
        }
        case "invalid":
        case "delta-failed":
        case "error": {
          if (answer.kind === "error") this.panelUnreachable("config", answer.error);
          else {
            // The panel answered: it is reachable, but this config is not usable.
            this.panelAnswered("config");
            const msg = `the panel sent an invalid config, ignored: ${answer.error}`;
            if (msg !== lastInvalid) log.warn(`${msg} (retrying with backoff; the core keeps serving ${this.deps.core.runningVersion ?? "nothing yet"})`);
            lastInvalid = msg;
          }
          await this.sleep(backoff);
          backoff = Math.min(backoff * 2, this.deps.maxBackoffMs ?? 10_000);
          continue;
        }
      }
    }
  }

  private panelUnreachable(channel: "config" | "report", why: string): void {
    const first = this.panelFailing.size === 0;
    this.panelFailing.add(channel);
    if (first) this.deps.log.warn(`cannot reach the panel: ${why} (retrying with backoff; the core keeps serving ${this.deps.core.runningVersion ?? "nothing yet"})`);
  }

  private panelAnswered(channel: "config" | "report"): void {
    if (!this.panelFailing.delete(channel)) return;
    if (this.panelFailing.size === 0) this.deps.log.info("reconnected to the panel");
  }

  /** Hands a config to the core; saves it for the next start when the core runs it. */
  private async applyConfig(config: AgentConfig): Promise<boolean> {
    const intervalBefore = this.reportIntervalS;
    const wasRunning = this.deps.core.running;
    this.config = config;
    const ok = await this.deps.core.apply(this.withoutOverLimit(config));
    if (ok) {
      try {
        writeJsonAtomic(path.join(this.deps.stateDir, STATE_FILES.lastConfig), config);
      } catch (err) {
        this.deps.log.warn(`could not save the config for the next start: ${(err as Error).message}`);
      }
    }
    if (this.reportIntervalS !== intervalBefore) this.scheduleReport(this.reportIntervalS * 1000);
    // A rejected config, or one leaving an inbound out for its files, is reported now, so the
    // health page (and the balancer) know without waiting. So is a core that has just come up:
    // the report sent at start said "not running", and the next one is an interval away.
    if (!ok || this.deps.core.awaitingFiles || (!wasRunning && this.deps.core.running)) this.reportSoon();
    return ok;
  }

  /**
   * The config the core runs: the panel's without the users this agent took out for passing
   * their limit. Users the panel no longer lists are forgotten first (limits.ts keepOnly).
   */
  private withoutOverLimit(config: AgentConfig): AgentConfig {
    if (!this.limits.enabled) return config;
    if (!this.limits.empty) {
      this.limits.keepOnly(listedIn(config.users));
      this.saveLimits();
    }
    const over = this.limits.removed;
    if (over.size === 0) return config;
    return { ...config, users: config.users.filter((u) => !over.has(u.email)) };
  }

  /**
   * The limits as the last run left them: a user cut while the panel is away stays out across
   * an agent restart, and what the others spent since is what delivery has not had acknowledged.
   */
  private loadLimits(): void {
    const file = path.join(this.deps.stateDir, STATE_FILES.limits);
    let raw: unknown;
    try {
      raw = readJson(file);
    } catch {
      raw = null;
    }
    if (raw === undefined) return;
    const parsed = savedLimitsSchema.safeParse(raw);
    if (!parsed.success) {
      this.deps.log.warn(`${file} is not a limits file: ignored, limits are learnt again from the next report`);
      return;
    }
    const unacknowledged = this.deps.delivery.unacknowledgedBytes();
    this.limits.restore(parsed.data, (email) => unacknowledged.get(email) ?? 0);
  }

  private saveLimits(): void {
    try {
      writeJsonAtomic(path.join(this.deps.stateDir, STATE_FILES.limits), this.limits.saved());
    } catch (err) {
      this.deps.log.warn(`could not save the limits for the next start: ${(err as Error).message}`);
    }
  }

  /** Hands the core the current config without the users over their limit (or with those back). */
  private async applyLimits(): Promise<void> {
    const config = this.config;
    if (!config || this.stopped) return;
    await this.deps.core.apply(this.withoutOverLimit(config));
  }

  private scheduleLimitCheck(): void {
    if (this.stopped) return;
    this.limitTimer = setTimeout(() => {
      this.limitTimer = null;
      this.limitCheck = this.checkLimits().finally(() => {
        this.limitCheck = null;
        this.scheduleLimitCheck();
      });
    }, this.deps.limitCheckMs ?? LIMIT_CHECK_MS);
  }

  /**
   * Reads the counters (into the delivery buffer, as a report would) and removes at once the
   * users who passed their limit. Only against a panel that sends limits: for an older panel
   * the agent reads counters at report time only, as before.
   */
  private async checkLimits(): Promise<void> {
    const { core } = this.deps;
    if (!this.limits.enabled || !core.running || this.stopped) return;
    let traffic: TrafficByEmail;
    try {
      if (core.userCount > LIMIT_FULL_READ_MAX_USERS) {
        const watched = this.limits.watched(LIMIT_WATCH_MAX);
        if (watched.length === 0) return;
        traffic = await core.readTrafficOf(watched);
      } else {
        traffic = await core.readTraffic();
      }
    } catch {
      return; // the report says the API is down
    }
    this.limitReads++;
    this.takeTraffic(traffic);
    if (this.limits.wantsReport && Date.now() - this.lastLimitReportAt >= Math.max(LIMIT_REPORT_GAP_MS, (this.reportIntervalS * 1000) / 4)) {
      // A user with traffic whose limit is unknown: the answer to a report says. It takes the
      // place of the scheduled report (the next one follows an interval after it).
      this.lastLimitReportAt = Date.now();
      if (this.reportTimer) {
        clearTimeout(this.reportTimer);
        this.reportTimer = null;
      }
      this.reportSoon();
    }
  }

  /**
   * Users who just passed their limit (whichever read saw it): out of the core at once. Not
   * awaited by the reader: a read made for a restart runs inside the core's apply queue.
   */
  private async cutOverLimit(crossed: readonly string[]): Promise<void> {
    const { log } = this.deps;
    for (const email of crossed.slice(0, 20)) {
      const l = this.limits.of(email);
      if (l && l !== "unlimited") log.warn(`${email} passed its traffic limit (${l.spent} bytes since the last report, ${l.remaining} were left): removed from the core until the panel says otherwise`);
    }
    if (crossed.length > 20) log.warn(`… and ${crossed.length - 20} more users passed their traffic limit`);
    this.saveLimits();
    await this.applyLimits();
    // The panel learns the bytes now, not at the next interval (it stays the authority).
    this.reportSoon();
  }

  /** An ack's limits: what each limited user of the acknowledged batch has left. */
  private async takeLimits(reported: readonly string[], raw: unknown): Promise<void> {
    const parsed = ackLimitsSchema.safeParse(raw);
    if (!parsed.success) {
      this.deps.log.warn(`the panel's limits are unreadable, ignored: ${parsed.error.issues[0]?.message ?? "invalid"}`);
      return;
    }
    const limits: UserRemaining[] = parsed.data;
    const open = this.deps.delivery.openBytes();
    const { restore, remove } = this.limits.onAck(reported, limits, (email) => open.get(email) ?? 0);
    this.saveLimits();
    for (const email of remove) this.deps.log.warn(`${email} is over its traffic limit: removed from the core until the panel says otherwise`);
    for (const email of restore) this.deps.log.info(`${email} is under its traffic limit again: served again`);
    if (remove.length > 0 || restore.length > 0) await this.applyLimits();
  }

  /** Waits ms, or less when the agent stops or a report got through (the panel is back). */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.abort.signal.removeEventListener("abort", done);
        this.wakeConfigLoop = null;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.abort.signal.addEventListener("abort", done, { once: true });
      this.wakeConfigLoop = done;
    });
  }

  private scheduleReport(delayMs: number) {
    if (this.stopped) return;
    if (this.reportTimer) clearTimeout(this.reportTimer);
    this.reportTimer = setTimeout(() => {
      this.reportTimer = null;
      this.reportSoon();
    }, delayMs);
  }

  /** Starts a report now, or right after the one in flight. */
  reportSoon(): void {
    if (this.stopped) return;
    if (this.reporting) {
      this.reportAgain = true;
      return;
    }
    this.reporting = this.reportCycle().finally(() => {
      this.reporting = null;
      if (this.reportAgain && !this.stopped) {
        this.reportAgain = false;
        this.reportSoon();
      }
    });
  }

  /**
   * Counters read (for a report, a restart, the limit check or the load): delivered once,
   * checked against limits, and counted in the report's and the load window's load.
   */
  private takeTraffic(traffic: TrafficByEmail) {
    const crossed = this.limits.onRead(traffic);
    if (crossed.length > 0) void this.cutOverLimit(crossed);
    this.deps.delivery.add(traffic);
    const w = this.loadWindow;
    for (const [email, t] of traffic) {
      const e = this.pendingTraffic.get(email) ?? { up: 0, down: 0 };
      e.up += t.up;
      e.down += t.down;
      this.pendingTraffic.set(email, e);
      if (w === null) continue;
      if (t.up + t.down > 0) w.emails.add(email);
      w.up += t.up;
      w.down += t.down;
    }
  }

  private async reportCycle(): Promise<void> {
    try {
      const wait = this.retryAt - Date.now();
      if (wait > 0) {
        // 429: the panel asked us to wait; the next report goes out after Retry-After.
        this.scheduleReport(wait);
        return;
      }
      // Sends batches back to back while traffic waits (after an ack, right away).
      for (let i = 0; i < 100 && !this.stopped; i++) {
        const more = await this.reportOnce(i > 0);
        if (!more) break;
      }
    } catch (err) {
      if (err instanceof FatalError) this.fatal?.(err);
      else this.deps.log.error(`report failed: ${(err as Error).stack ?? String(err)}`);
    } finally {
      if (!this.stopped && this.reportTimer === null) this.scheduleReport(this.reportIntervalS * 1000);
    }
  }

  /**
   * One report; true when another batch is waiting to be sent at once. A follow-up (a batch
   * sent right after the previous report's ack) repeats that report's measurement: rates and
   * users online over the milliseconds since would be noise (a few users, a spike), and they
   * feed the server's balancing. The counters are read at the next scheduled report.
   */
  private async reportOnce(followUp = false): Promise<boolean> {
    const { core, delivery } = this.deps;
    // A core that died meanwhile is measured (and said) at once.
    const repeat = followUp && this.lastMeasurement !== null && core.running && !this.coreExitedSinceReport;
    const measured = repeat && this.lastMeasurement ? this.lastMeasurement : await this.measure();
    this.lastMeasurement = measured;
    const batch = delivery.next();
    const report: AgentReport = {
      ...measured,
      sentAt: new Date().toISOString(),
      ...(batch ? { instance: batch.instance, seq: batch.seq, users: batch.users } : {}),
      ...(core.runningVersion ? { configVersion: core.runningVersion } : {}),
      configError: core.configError,
      unservedInbounds: core.unserved,
      core: { kind: core.kind, version: this.deps.coreVersion },
      agentVersion: this.deps.agentVersion,
    };
    return this.sendReport(report, batch);
  }

  /** A report's measured part: counters read over the window since the last one, listeners, neighbours, CPU and memory. */
  private async measure(): Promise<Measurement> {
    const { core, log } = this.deps;
    const exited = this.coreExitedSinceReport;
    this.coreExitedSinceReport = false;
    let apiOk = false;
    try {
      if (core.running) {
        this.takeTraffic(await core.readTraffic());
        apiOk = true;
      }
    } catch (err) {
      log.warn(`reading traffic counters failed: ${(err as Error).message}`);
    }
    const now = Date.now();
    const seconds = Math.max(0.001, (now - this.lastTrafficAt) / 1000);
    let up = 0;
    let down = 0;
    let online = 0;
    for (const t of this.pendingTraffic.values()) {
      up += t.up;
      down += t.down;
      if (t.up + t.down > 0) online++;
    }
    this.pendingTraffic = new Map();
    this.lastTrafficAt = now;

    const timeout = checkTimeoutMs(this.reportIntervalS);
    // A core that is not running, or died since the last report, is reported as such (serviceRunning false): its ports are not checked.
    const [listeners, neighbours] = await Promise.all([
      core.running && !exited ? checkListeners(core.servedInbounds, timeout) : Promise.resolve({ alive: false, down: [] }),
      checkNeighbours(this.config?.neighbours ?? [], timeout),
    ]);
    const { cpu, memory } = this.sampler.sample();
    return {
      listenerAlive: listeners.alive,
      serviceRunning: core.running && apiOk && !exited,
      usersOnline: online,
      rxBps: Math.min(MAX_BPS, (up * 8) / seconds),
      txBps: Math.min(MAX_BPS, (down * 8) / seconds),
      cpu,
      memory,
      neighbours,
      listenersDown: listeners.down,
    };
  }

  /** Sends one report and acts on the answer; true when another batch is waiting to be sent at once. */
  private async sendReport(report: AgentReport, batch: ReturnType<Delivery["next"]>): Promise<boolean> {
    const { delivery, log } = this.deps;
    const answer = await this.deps.panel.postReport(report, this.abort.signal);
    if (answer.kind === "error" || (answer.kind === "retry" && answer.unavailable)) {
      if (this.stopped) return false;
      const kept = batch ? ` (traffic batch ${batch.seq} is kept and resent)` : "";
      // Traffic held back is worth a line each time (what waits for the panel); the outage itself is said once.
      if (this.panelFailing.size > 0 && batch) log.info(`report not delivered${kept}`);
      if (answer.kind === "error") this.panelUnreachable("report", `report not delivered: ${answer.error}${kept}`);
      else {
        this.panelUnreachable("report", `report not delivered: the panel is unavailable (${answer.error})${kept}`);
        this.retryAt = Date.now() + answer.afterS * 1000;
        this.scheduleReport(answer.afterS * 1000);
      }
      return false;
    }
    this.panelAnswered("report");
    switch (answer.kind) {
      case "ack":
        this.wakeConfigLoop?.();
        {
          const more = batch ? delivery.acknowledge(batch.seq) : false;
          if (answer.ack.limits !== undefined) await this.takeLimits(batch?.users.map((u) => u.email) ?? [], answer.ack.limits);
          return more;
        }
      case "unauthorized":
        throw new FatalError(UNAUTHORIZED_MESSAGE, 3);
      case "retry":
        this.retryAt = Date.now() + answer.afterS * 1000;
        log.warn(`the panel asks to slow down (${answer.error}): next report in ${answer.afterS} s`);
        this.scheduleReport(answer.afterS * 1000);
        return false;
      case "rejected":
        // A 400/413 means this agent and the panel disagree on the contract: a bug. Resending
        // the same body would fail forever and wedge delivery of everything after it, so the
        // batch is dropped after saying loudly what was lost.
        if (batch) {
          const dropped = delivery.drop(batch.seq);
          const bytes = dropped.reduce((s, u) => s + u.up + u.down, 0);
          log.error(`the panel rejected report seq ${batch.seq} (${answer.status}: ${answer.error}); DROPPED its traffic of ${dropped.length} users (${bytes} bytes) so later reports can go through. This is a bug: please report it.`);
          return delivery.next() !== null;
        }
        log.error(`the panel rejected a report (${answer.status}: ${answer.error}). This is a bug: please report it.`);
        return false;
    }
  }
}
