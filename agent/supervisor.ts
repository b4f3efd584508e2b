/**
 * Runs the VPN core as a child process and keeps it running: an unexpected exit is reported
 * (so the agent can report out of schedule) and followed by a restart after a backoff that
 * doubles from 1 s to 30 s and resets once the core ran for a minute. The core's output is
 * forwarded to the agent's log, at most `maxLinesPerMinute` lines, so a crash loop or a chatty
 * core cannot flood the journal; the last lines are kept to explain an exit.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Log } from "./log";

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  ranMs: number;
  lastLines: string[];
  /** Delay before the next start. */
  restartInMs: number;
}

export interface SupervisorOptions {
  bin: string;
  args: string[];
  log: Log;
  onExit?: (info: ExitInfo) => void;
  /** The core was started (pid), and when it exited (null). */
  onPid?: (pid: number | null) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  stableMs?: number;
  maxLinesPerMinute?: number;
  env?: NodeJS.ProcessEnv;
}

export class Supervisor {
  private child: ChildProcess | null = null;
  private wanted = false;
  private backoffMs: number;
  private restartTimer: NodeJS.Timeout | null = null;
  private startedAt = 0;
  private readonly lastLines: string[] = [];
  private windowStart = 0;
  private linesInWindow = 0;
  private dropped = 0;
  private exitWaiters: Array<() => void> = [];

  constructor(private readonly opts: SupervisorOptions) {
    this.backoffMs = opts.minBackoffMs ?? 1000;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the core now (if not running) and keeps it running until stop(). */
  start(): void {
    this.wanted = true;
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = null;
    }
    if (this.child) return;
    this.spawnChild();
  }

  /** Stops the core: SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    this.wanted = false;
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = null;
    }
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
    child.kill("SIGTERM");
    const killTimer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(killTimer);
  }

  /** A deliberate restart (new config): no backoff, not reported as a crash. */
  async restart(): Promise<void> {
    await this.stop();
    this.backoffMs = this.opts.minBackoffMs ?? 1000;
    this.start();
  }

  private spawnChild() {
    const child = spawn(this.opts.bin, this.opts.args, { stdio: ["ignore", "pipe", "pipe"], env: this.opts.env ?? process.env });
    this.child = child;
    this.startedAt = Date.now();
    this.lastLines.length = 0;
    if (child.pid !== undefined) this.opts.onPid?.(child.pid);
    let spawnError: string | null = null;
    const onData = (buf: Buffer) => {
      for (const line of buf.toString("utf8").split("\n")) if (line.trim() !== "") this.forward(line.trimEnd());
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("error", (err) => {
      spawnError = err.message;
      this.forward(`could not start ${this.opts.bin}: ${err.message}`);
    });
    child.once("close", (code, signal) => {
      this.child = null;
      this.opts.onPid?.(null);
      const waiters = this.exitWaiters;
      this.exitWaiters = [];
      for (const w of waiters) w();
      if (!this.wanted) return;
      const ranMs = Date.now() - this.startedAt;
      if (ranMs >= (this.opts.stableMs ?? 60_000)) this.backoffMs = this.opts.minBackoffMs ?? 1000;
      const restartInMs = this.backoffMs;
      this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs ?? 30_000);
      const how = spawnError ? spawnError : signal ? `signal ${signal}` : `code ${code}`;
      this.opts.log.warn(`the core exited (${how}) after ${Math.round(ranMs / 100) / 10} s; restarting in ${restartInMs / 1000} s`);
      this.opts.onExit?.({ code, signal, ranMs, lastLines: [...this.lastLines], restartInMs });
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        if (this.wanted && !this.child) this.spawnChild();
      }, restartInMs);
      this.restartTimer.unref?.();
    });
  }

  private forward(line: string) {
    this.lastLines.push(line);
    if (this.lastLines.length > 20) this.lastLines.shift();
    const now = Date.now();
    if (now - this.windowStart >= 60_000) {
      if (this.dropped > 0) this.opts.log.warn(`core: ${this.dropped} more lines of output were not logged`);
      this.windowStart = now;
      this.linesInWindow = 0;
      this.dropped = 0;
    }
    if (this.linesInWindow < (this.opts.maxLinesPerMinute ?? 60)) {
      this.linesInWindow++;
      this.opts.log.info(`core: ${line}`);
    } else this.dropped++;
  }
}
