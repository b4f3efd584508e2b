/**
 * The agent's runtime: keeps the core on the panel's newest config (long-poll), and reports
 * health, load and per-user traffic every interval. Lives through the panel being away: the
 * core keeps the last good config (also kept on disk for the next start) and traffic waits in
 * the delivery buffer until the panel acknowledges it.
 */
import fs from "node:fs";
import path from "node:path";
import { MAX_BPS, type AgentConfig, type AgentReport } from "../core/agent-wire";
import { HEARTBEAT_INTERVAL_S } from "../core/heartbeat";
import { checkListeners, checkNeighbours, checkTimeoutMs } from "./checks";
import { checkConfig, readConfigBody } from "./config-stream";
import type { CoreManager } from "./core-manager";
import type { Delivery } from "./delivery";
import type { Log } from "./log";
import { UNAUTHORIZED_MESSAGE, type PanelClient } from "./panel";
import { STATE_FILES, writeJsonAtomic } from "./state";
import type { TrafficByEmail } from "./stats";
import { SystemSampler } from "./system";

/** Long-poll wait: under the panel's 60 s cap and common proxies' 60 s idle timeouts. */
export const CONFIG_WAIT_S = 50;
/** Interval before the first config arrives (no panel, no saved config). */
const DEFAULT_REPORT_INTERVAL_S = 30;

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
    await this.startFromSavedConfig();
    this.configLoopDone = this.configLoop();
    // The first report goes out at once: until it arrives a new server waits for its first
    // check (and the core coming up sends another one, see applyConfig).
    this.reportSoon();
    this.heartbeat();
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
    await this.heartbeating?.catch(() => {});
    await this.reporting?.catch(() => {});
    await this.drainCounters().catch(() => {});
    await this.deps.core.stop();
    await this.configLoopDone.catch(() => {});
  }

  /**
   * One tiny POST every heartbeat interval, on its own timer: the panel takes this server out
   * of rotation within seconds when they stop and a fast probe confirms (core/heartbeat.ts).
   * A panel that predates heartbeats (404) is not asked again until the agent restarts.
   */
  private heartbeat(): void {
    const intervalS = this.deps.heartbeatIntervalS ?? HEARTBEAT_INTERVAL_S;
    if (this.stopped || !(intervalS > 0)) return;
    const startedAt = Date.now();
    this.heartbeating = this.deps.panel.postHeartbeat(intervalS * 1000, this.abort.signal).then((answer) => {
      this.heartbeating = null;
      if (this.stopped) return;
      if (answer === "unsupported") {
        this.deps.log.info("the panel does not take heartbeats (404): fast failover is off for this server");
        return;
      }
      const wait = Math.max(0, intervalS * 1000 - (Date.now() - startedAt));
      this.heartbeatTimer = setTimeout(() => this.heartbeat(), wait);
    });
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
    void this.deps.core.apply(checked.config).then((ok) => ok && this.reportSoon());
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
    const ok = await this.deps.core.apply(config);
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

  private takeTraffic(traffic: TrafficByEmail) {
    this.deps.delivery.add(traffic);
    for (const [email, t] of traffic) {
      const e = this.pendingTraffic.get(email) ?? { up: 0, down: 0 };
      e.up += t.up;
      e.down += t.down;
      this.pendingTraffic.set(email, e);
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
        const more = await this.reportOnce();
        if (!more) break;
      }
    } catch (err) {
      if (err instanceof FatalError) this.fatal?.(err);
      else this.deps.log.error(`report failed: ${(err as Error).stack ?? String(err)}`);
    } finally {
      if (!this.stopped && this.reportTimer === null) this.scheduleReport(this.reportIntervalS * 1000);
    }
  }

  /** One report; true when another batch is waiting to be sent at once. */
  private async reportOnce(): Promise<boolean> {
    const { core, delivery, log } = this.deps;
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
    const batch = delivery.next();
    const report: AgentReport = {
      listenerAlive: listeners.alive,
      serviceRunning: core.running && apiOk && !exited,
      usersOnline: online,
      rxBps: Math.min(MAX_BPS, (up * 8) / seconds),
      txBps: Math.min(MAX_BPS, (down * 8) / seconds),
      cpu,
      memory,
      neighbours,
      sentAt: new Date(now).toISOString(),
      ...(batch ? { instance: batch.instance, seq: batch.seq, users: batch.users } : {}),
      ...(core.runningVersion ? { configVersion: core.runningVersion } : {}),
      configError: core.configError,
      unservedInbounds: core.unserved,
      listenersDown: listeners.down,
      core: { kind: core.kind, version: this.deps.coreVersion },
      agentVersion: this.deps.agentVersion,
    };
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
        if (batch) return delivery.acknowledge(batch.seq);
        return false;
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
