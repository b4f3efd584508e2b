import type { ChildProcess } from "node:child_process";

/** True once the child has exited or been killed by a signal. */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Stops a child and resolves once it has exited: SIGTERM, then SIGKILL when it is still
 * running after `graceMs` (a stuck shutdown must not hold a test's clean-up forever).
 */
export async function stopProcess(child: ChildProcess, graceMs = 5000): Promise<void> {
  // A child whose spawn failed has no PID and never emits "exit".
  if (child.pid === undefined || hasExited(child)) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const kill = setTimeout(() => {
    if (!hasExited(child)) child.kill("SIGKILL");
  }, graceMs);
  try {
    await exited;
  } finally {
    clearTimeout(kill);
  }
}
