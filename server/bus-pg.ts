/**
 * Carries change-bus events between app instances over PostgreSQL LISTEN/NOTIFY, so a drag on
 * instance A reaches the subscriptions and dashboards of instance B within a second. One
 * dedicated connection listens (and sends); it reconnects with backoff after a database
 * restart and then tells this instance to reload everything, since events may have been
 * missed while it was away.
 */
import pg from "pg";
import { deliverRemoteChange, setRemoteForwarder, type ChangeEvent, type ChangeKind } from "@/server/bus";
import { logger } from "@/server/logger";

export const CHANGE_CHANNEL = "routeboard_changes";
const KINDS: ChangeKind[] = ["topology", "health", "metrics", "subscribers", "traffic", "settings", "assignments"];

export class PgChangeBus {
  private client: pg.Client | null = null;
  private stopped = false;
  private retryMs = 250;
  private timer: NodeJS.Timeout | null = null;
  /** Events sent while disconnected are dropped: every instance reloads all on reconnect. */
  connected = false;

  constructor(private readonly url: string) {}

  async start(): Promise<void> {
    setRemoteForwarder((e) => this.send(e));
    await this.connect(false);
  }

  private async connect(isReconnect: boolean): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5000, keepAlive: true });
    client.on("error", () => this.lost(client));
    client.on("end", () => this.lost(client));
    client.on("notification", (msg) => {
      if (msg.channel !== CHANGE_CHANNEL || !msg.payload) return;
      try {
        const e = JSON.parse(msg.payload) as ChangeEvent;
        if (KINDS.includes(e.kind)) deliverRemoteChange(e);
      } catch {
        // not ours: ignore
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => {});
      if (!isReconnect && !this.stopped) logger().warn({ err: (err as Error).message }, "change bus: cannot listen yet; retrying");
      this.scheduleReconnect();
      return;
    }
    this.client = client;
    this.connected = true;
    this.retryMs = 250;
    if (isReconnect) {
      logger().info("change bus: reconnected; reloading everything");
      this.reloadEverything("reconnect");
    }
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.connected = false;
    if (!this.stopped) {
      logger().warn("change bus: connection lost; reconnecting");
      // Readers try to reload at once: if the database is gone they switch to their last
      // good snapshot and say so (stale), instead of silently serving it as fresh.
      this.reloadEverything("disconnect");
    }
    this.scheduleReconnect();
  }

  private reloadEverything(origin: string): void {
    const at = Date.now();
    for (const kind of KINDS) deliverRemoteChange({ kind, clusterId: null, origin, at });
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.connect(true);
    }, this.retryMs);
    this.timer.unref();
    this.retryMs = Math.min(this.retryMs * 2, 2000);
  }

  /** The last notify sent: a pg client runs one query at a time, so each waits for the one before. */
  private sending: Promise<unknown> = Promise.resolve();

  private send(e: ChangeEvent): void {
    const c = this.client;
    if (!c) return;
    const payload = JSON.stringify(e);
    this.sending = this.sending.then(() => (this.client === c ? c.query("select pg_notify($1, $2)", [CHANGE_CHANNEL, payload]) : undefined)).catch(() => {});
  }

  async stop(): Promise<void> {
    this.stopped = true;
    setRemoteForwarder(undefined);
    if (this.timer) clearTimeout(this.timer);
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }
}
