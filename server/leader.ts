/**
 * Exactly one instance runs the active prober: the one holding a PostgreSQL session-level
 * advisory lock on its own connection. When that instance dies its connection closes, the
 * lock is released, and another instance takes it on its next try (every `retryMs`).
 * Losing the connection (database restart) means losing the lock: stop at once.
 */
import pg from "pg";
import { logger } from "@/server/logger";

export const PROBER_LOCK_KEY = 727274002;

export interface LeaderCallbacks {
  onAcquire(): void | Promise<void>;
  onLose(): void | Promise<void>;
}

export class AdvisoryLeader {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private trying = false;
  leader = false;

  constructor(
    private readonly url: string,
    private readonly key: number,
    private readonly callbacks: LeaderCallbacks,
    private readonly retryMs = 5000,
  ) {}

  start(): void {
    void this.tryAcquire();
  }

  private schedule(): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.tryAcquire();
    }, this.retryMs);
    this.timer.unref();
  }

  private async tryAcquire(): Promise<void> {
    if (this.stopped || this.leader || this.trying) return;
    this.trying = true;
    try {
      if (!this.client) {
        const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5000, keepAlive: true });
        client.on("error", () => this.lost(client));
        client.on("end", () => this.lost(client));
        await client.connect();
        this.client = client;
      }
      const res = await this.client.query<{ ok: boolean }>("select pg_try_advisory_lock($1) as ok", [this.key]);
      if (res.rows[0]?.ok && !this.stopped) {
        this.leader = true;
        logger().info({ key: this.key }, "acquired the prober lock");
        await this.callbacks.onAcquire();
      }
    } catch {
      const c = this.client;
      this.client = null;
      await c?.end().catch(() => {});
    } finally {
      this.trying = false;
      if (!this.leader) this.schedule();
    }
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    if (this.leader) {
      this.leader = false;
      logger().warn("lost the prober lock (database connection closed)");
      void this.callbacks.onLose();
    }
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const wasLeader = this.leader;
    this.leader = false;
    if (wasLeader) await this.callbacks.onLose();
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }
}
