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

/** Bytes per write when a file comes in parts (parts are joined up to this, not written one by one). */
const WRITE_CHUNK_CHARS = 1 << 20;

/** Writes `data`, or its parts in order (a large file need not be one string). */
export function writeFileAtomic(file: string, data: string | Iterable<string>, mode = 0o600): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`);
  const fd = fs.openSync(tmp, "w", mode);
  try {
    let chunk = "";
    for (const part of typeof data === "string" ? [data] : data) {
      chunk += part;
      if (chunk.length >= WRITE_CHUNK_CHARS) {
        fs.writeSync(fd, chunk);
        chunk = "";
      }
    }
    if (chunk !== "") fs.writeSync(fd, chunk);
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

/**
 * Compact, and long arrays a slice at a time: the saved panel config holds every user (about
 * 90 MB of text at a million), which would otherwise be one string (pretty-printed, 1.6 times that).
 */
export function writeJsonAtomic(file: string, value: unknown): void {
  writeFileAtomic(file, jsonParts(value, true));
}

/** A value that writes its own JSON text in parts (render-common.ts ClientList). */
interface JsonInParts {
  jsonParts(): Iterable<string>;
}

function inParts(value: object): value is JsonInParts {
  return typeof (value as Partial<JsonInParts>).jsonParts === "function";
}

/**
 * JSON.stringify(value) + "\n" in parts: plain objects and arrays walked, arrays of over
 * 10,000 items written in slices, values with a jsonParts method written by it.
 */
export function* jsonParts(value: unknown, newline = false): Generator<string> {
  if (value !== null && typeof value === "object" && inParts(value)) yield* value.jsonParts();
  else if (Array.isArray(value) && value.length > 10_000) {
    yield "[";
    for (let from = 0; from < value.length; from += 10_000) yield (from > 0 ? "," : "") + JSON.stringify(value.slice(from, from + 10_000)).slice(1, -1);
    yield "]";
  } else if (Array.isArray(value)) {
    yield "[";
    for (let k = 0; k < value.length; k++) {
      if (k > 0) yield ",";
      const v: unknown = value[k];
      // JSON.stringify writes these as null in an array.
      if (v === undefined || typeof v === "function" || typeof v === "symbol") yield "null";
      else yield* jsonParts(v);
    }
    yield "]";
  } else if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype && !("toJSON" in value)) {
    let first = true;
    yield "{";
    for (const [key, v] of Object.entries(value)) {
      if (v === undefined || typeof v === "function" || typeof v === "symbol") continue;
      yield `${first ? "" : ","}${JSON.stringify(key)}:`;
      first = false;
      yield* jsonParts(v);
    }
    yield "}";
  } else yield JSON.stringify(value) ?? "null";
  if (newline) yield "\n";
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
  /** Limited users' remaining bytes as of the last acknowledged report, and who is out (limits.ts). */
  limits: "limits.json",
} as const;
