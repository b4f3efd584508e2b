/**
 * Exactly-once delivery of per-user traffic (DESIGN §6). Traffic read from the core
 * accumulates in `open`; when a report is due, `open` becomes the `pending` batch with the
 * next seq. The pending batch is resent, with the same seq and users, until the panel
 * acknowledges it (a duplicate ack counts: the panel already has it); only then is the next
 * batch cut. Everything is persisted at each change, so an agent restart loses nothing and
 * the panel's (instance, seq) de-duplication keeps it from being counted twice.
 */
import crypto from "node:crypto";
import { z } from "zod";
import type { UserTraffic } from "../core/agent-wire";
import { MAX_USER_BYTES_PER_REPORT } from "../core/agent-wire";
import { readJson, writeJsonAtomic } from "./state";
import type { TrafficByEmail } from "./stats";

const usersSchema = z.array(z.object({ email: z.string().min(1), up: z.int().min(0), down: z.int().min(0) }));
const persistedSchema = z.object({
  instance: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/),
  nextSeq: z.int().min(1),
  pending: z.object({ seq: z.int().min(1), users: usersSchema }).nullable(),
  open: usersSchema,
});
export type DeliveryState = z.infer<typeof persistedSchema>;

export interface Batch {
  instance: string;
  seq: number;
  users: UserTraffic[];
}

export function newInstanceId(): string {
  return crypto.randomBytes(12).toString("base64url");
}

export class Delivery {
  private state: DeliveryState;

  /** `file` null keeps state in memory only (tests of the pure logic). */
  constructor(private readonly file: string | null) {
    const loaded = file ? readJson(file) : undefined;
    const parsed = persistedSchema.safeParse(loaded);
    if (loaded !== undefined && !parsed.success) throw new Error(`${file}: not a delivery state file (${parsed.error.issues[0]?.message ?? "invalid"}): move it away to start afresh`);
    this.state = parsed.success ? parsed.data : { instance: newInstanceId(), nextSeq: 1, pending: null, open: [] };
    this.save();
  }

  get instance(): string {
    return this.state.instance;
  }

  /** Adds traffic read from the core to the open batch (zero rows are left out). */
  add(traffic: TrafficByEmail): void {
    if (traffic.size === 0) return;
    const byEmail = new Map(this.state.open.map((u) => [u.email, { ...u }]));
    let changed = false;
    for (const [email, t] of traffic) {
      if (t.up === 0 && t.down === 0) continue;
      const e = byEmail.get(email) ?? { email, up: 0, down: 0 };
      e.up += t.up;
      e.down += t.down;
      byEmail.set(email, e);
      changed = true;
    }
    if (!changed) return;
    this.state.open = [...byEmail.values()];
    this.save();
  }

  /**
   * The batch to send now: the unacknowledged one if any, else the open traffic cut into a new
   * batch with the next seq. Null when there is no traffic to deliver.
   */
  next(): Batch | null {
    if (!this.state.pending) {
      if (this.state.open.length === 0) return null;
      // A user's counter could exceed what one report may carry only after ~1 PB: cap it
      // there and keep the remainder open for the next batch, so the panel never sees a 400.
      const users: UserTraffic[] = [];
      const rest: UserTraffic[] = [];
      for (const u of this.state.open) {
        const up = Math.min(u.up, MAX_USER_BYTES_PER_REPORT);
        const down = Math.min(u.down, MAX_USER_BYTES_PER_REPORT);
        users.push({ email: u.email, up, down });
        if (u.up > up || u.down > down) rest.push({ email: u.email, up: u.up - up, down: u.down - down });
      }
      this.state.pending = { seq: this.state.nextSeq, users };
      this.state.nextSeq += 1;
      this.state.open = rest;
      this.save();
    }
    return { instance: this.state.instance, seq: this.state.pending.seq, users: this.state.pending.users.map((u) => ({ ...u })) };
  }

  /** Bytes (up + down) per user not yet acknowledged (the pending batch and the open one). */
  unacknowledgedBytes(): Map<string, number> {
    const out = this.openBytes();
    for (const u of this.state.pending?.users ?? []) out.set(u.email, (out.get(u.email) ?? 0) + u.up + u.down);
    return out;
  }

  /** Bytes (up + down) per user read but not yet in a batch: what came after the pending one was cut. */
  openBytes(): Map<string, number> {
    const out = new Map<string, number>();
    for (const u of this.state.open) out.set(u.email, (out.get(u.email) ?? 0) + u.up + u.down);
    return out;
  }

  /** The panel took batch `seq` (200, duplicate or not). True when more traffic waits. */
  acknowledge(seq: number): boolean {
    if (this.state.pending?.seq === seq) {
      this.state.pending = null;
      this.save();
    }
    return this.state.open.length > 0;
  }

  /**
   * The panel refused batch `seq` with 400: resending the same body would fail forever and
   * wedge delivery, so the batch is dropped (the caller logs it loudly). Its seq is not reused.
   */
  drop(seq: number): UserTraffic[] {
    if (this.state.pending?.seq !== seq) return [];
    const dropped = this.state.pending.users;
    this.state.pending = null;
    this.save();
    return dropped;
  }

  get hasPending(): boolean {
    return this.state.pending !== null;
  }

  snapshot(): DeliveryState {
    return structuredClone(this.state);
  }

  private save(): void {
    if (this.file) writeJsonAtomic(this.file, this.state);
  }
}
