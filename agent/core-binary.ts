/**
 * Finding the core's binaries. A missing core is the most likely first-run problem, so the
 * error lists every path tried and how to install the core.
 */
import fs from "node:fs";
import path from "node:path";
import { execFile } from "node:child_process";
import type { CoreKind } from "./cli";

export interface CoreBinaries {
  kind: CoreKind;
  /** xray or v2ray. */
  bin: string;
  /** The API client: xray itself (`xray api …`) or v2ray 4's v2ctl. */
  ctl: string;
}

export const INSTALL_HINT: Record<CoreKind, string> = {
  xray: 'install Xray-core with its official script (bash -c "$(curl -L https://github.com/XTLS/Xray-install/raw/main/install-release.sh)" @ install) or put a release binary from https://github.com/XTLS/Xray-core/releases at /usr/local/bin/xray, or pass --core-bin',
  v2ray: "install v2ray 4.x with: apt-get install v2ray (Debian/Ubuntu), or pass --core-bin",
};

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function candidates(name: string, envPath: string | undefined, fixed: string[]): string[] {
  const fromPath = (envPath ?? "").split(path.delimiter).filter((d) => d !== "").map((d) => path.join(d, name));
  return [...new Set([...fromPath, ...fixed])];
}

export type FindResult = { ok: true; bins: CoreBinaries } | { ok: false; error: string };

export function findCoreBinaries(kind: CoreKind, coreBin: string | null, envPath: string | undefined, executable: (f: string) => boolean = isExecutable): FindResult {
  const tried: string[] = [];
  const pick = (list: string[]) => {
    for (const f of list) {
      tried.push(f);
      if (executable(f)) return f;
    }
    return null;
  };
  const name = kind;
  const bin = coreBin !== null ? pick([coreBin]) : pick(candidates(name, envPath, [`/usr/local/bin/${name}`, `/usr/bin/${name}`]));
  if (!bin) {
    const where = coreBin !== null ? `--core-bin ${coreBin} is not an executable file` : `no ${name} binary found (tried ${tried.join(", ")})`;
    return { ok: false, error: `${where}: ${INSTALL_HINT[kind]}` };
  }
  if (kind === "xray") return { ok: true, bins: { kind, bin, ctl: bin } };
  // v2ray 4 ships its API client v2ctl next to the server binary.
  const ctlTried: string[] = [];
  const ctl = [path.join(path.dirname(bin), "v2ctl"), ...candidates("v2ctl", envPath, ["/usr/bin/v2ctl", "/usr/local/bin/v2ctl"])].find((f) => {
    ctlTried.push(f);
    return executable(f);
  });
  if (!ctl) return { ok: false, error: `found ${bin} but not its API client v2ctl (tried ${[...new Set(ctlTried)].join(", ")}): v2ray 4.x is needed; ${INSTALL_HINT.v2ray}` };
  return { ok: true, bins: { kind, bin, ctl } };
}

/** The core's version line, e.g. "V2Ray 4.34.0 (user) …" or "Xray 25.1.1 (Xray, Penetrates Everything.) …". */
export function coreVersion(bins: CoreBinaries): Promise<string> {
  const args = bins.kind === "xray" ? ["version"] : ["-version"];
  return new Promise((resolve) => {
    execFile(bins.bin, args, { timeout: 10_000 }, (err, stdout) => {
      const line = String(stdout).split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
      resolve((line || (err ? `unknown (${err.message})` : "unknown")).slice(0, 200));
    });
  });
}

/** `xray api adu` / `rmu` (HandlerService's user commands) arrived in Xray-core 25.7.26. */
export const XRAY_LIVE_USERS_SINCE = [25, 7, 26] as const;

/** x.y.z from a version line ("Xray 25.7.26 (Xray, Penetrates Everything.) …", "V2Ray 4.34.0 (user) …"), or null. */
export function parseCoreVersion(line: string): [number, number, number] | null {
  const m = /^(?:Xray|V2Ray) v?(\d+)\.(\d+)(?:\.(\d+))?(?:\s|$)/.exec(line.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

/**
 * Why this core cannot add and remove users while it runs, or null when it can. v2ray 4 has
 * no such API; Xray has it from 25.7.26. An Xray whose version line cannot be read is tried
 * (a failed `adu` falls back to a restart).
 */
export function liveUserChanges(kind: CoreKind, versionLine: string | null): string | null {
  if (kind === "v2ray") return "v2ray 4 cannot add VLESS users live";
  const v = versionLine === null ? null : parseCoreVersion(versionLine);
  if (v === null) return null;
  const since = XRAY_LIVE_USERS_SINCE;
  for (let i = 0; i < 3; i++) if (v[i] !== since[i]) return v[i]! > since[i]! ? null : `Xray ${v.join(".")} cannot add or remove users live (xray api adu/rmu came in ${since.join(".")})`;
  return null;
}
