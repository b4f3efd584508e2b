/**
 * CPU and memory use from /proc, the way `top` computes them: CPU is the non-idle share of
 * jiffies between two readings of /proc/stat; memory is 1 − MemAvailable/MemTotal.
 */
import fs from "node:fs";

export interface CpuTimes {
  idle: number;
  total: number;
}

/** The aggregate "cpu" line of /proc/stat; idle includes iowait. */
export function parseProcStat(text: string): CpuTimes | null {
  const line = text.split("\n").find((l) => l.startsWith("cpu "));
  if (!line) return null;
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  if (fields.length < 4 || fields.some((n) => !Number.isFinite(n))) return null;
  // user nice system idle iowait irq softirq steal (guest is already counted in user)
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
  return { idle: idle + iowait, total: user + nice + system + idle + iowait + irq + softirq + steal };
}

export function cpuPercent(prev: CpuTimes, now: CpuTimes): number {
  const total = now.total - prev.total;
  if (total <= 0) return 0;
  return clampPercent((100 * (total - (now.idle - prev.idle))) / total);
}

export function parseMeminfo(text: string): number | null {
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(text);
    return m ? Number(m[1]) : null;
  };
  const total = kb("MemTotal");
  const available = kb("MemAvailable") ?? (kb("MemFree") ?? 0) + (kb("Buffers") ?? 0) + (kb("Cached") ?? 0);
  if (!total) return null;
  return clampPercent((100 * (total - available)) / total);
}

function clampPercent(v: number): number {
  return Math.min(100, Math.max(0, Math.round(v * 10) / 10));
}

/** Samples CPU since the previous call (the first since the sampler was made). */
export class SystemSampler {
  private prev: CpuTimes | null = null;

  constructor(private readonly procDir = "/proc") {
    this.sample();
  }

  sample(): { cpu: number; memory: number } {
    let cpu = 0;
    let memory = 0;
    try {
      const now = parseProcStat(fs.readFileSync(`${this.procDir}/stat`, "utf8"));
      if (now) {
        cpu = cpuPercent(this.prev ?? { idle: 0, total: 0 }, now);
        this.prev = now;
      }
    } catch {
      // not Linux: report 0
    }
    try {
      memory = parseMeminfo(fs.readFileSync(`${this.procDir}/meminfo`, "utf8")) ?? 0;
    } catch {
      // not Linux: report 0
    }
    return { cpu, memory };
  }
}
