/**
 * Files in the state dir, written atomically (temp file in the same dir, fsync, rename), so a
 * crash or power cut leaves either the old or the new file, never half of one.
 */
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";

export function ensureDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
}

export function writeFileAtomic(file: string, data: string, mode = 0o600): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`);
  const fd = fs.openSync(tmp, "w", mode);
  try {
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

export function writeJsonAtomic(file: string, value: unknown): void {
  writeFileAtomic(file, JSON.stringify(value, null, 2) + "\n");
}

/** The parsed file, or undefined when it does not exist; a corrupt file throws. */
export function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  return JSON.parse(text);
}

/** Names of the files the agent keeps in its state dir. */
export const STATE_FILES = {
  /** The last panel config the core accepted: used at start when the panel is away. */
  lastConfig: "panel-config.json",
  /** The core config the core runs now. */
  coreConfig: "core-config.json",
  /** A candidate being tested by the core (never run unless it passes). */
  coreCandidate: "core-config.candidate.json",
  /** The running core's pid (removed when it exits). */
  corePid: "core.pid",
  /** instance id, next seq, the unacknowledged batch and the accumulating one. */
  delivery: "delivery.json",
} as const;
