/** Plain one-line logs on stderr (journald adds the time and unit under systemd). */
export interface Log {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export function stderrLog(prefix = "routeboard-agent"): Log {
  const line = (level: string, msg: string) => process.stderr.write(`${new Date().toISOString()} ${prefix} ${level}: ${msg}\n`);
  return { info: (m) => line("info", m), warn: (m) => line("warn", m), error: (m) => line("error", m) };
}

/** Collects lines (tests). */
export function memoryLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (m) => lines.push(`info: ${m}`), warn: (m) => lines.push(`warn: ${m}`), error: (m) => lines.push(`error: ${m}`) };
}
