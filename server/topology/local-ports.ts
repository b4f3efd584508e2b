/**
 * Free local ports for something that listens later (simulated fleets, apps under test).
 */
import { readFileSync } from "node:fs";
import net from "node:net";

/**
 * Where ports for a later listen are drawn from: below the kernel's ephemeral range. A port
 * the kernel handed out for a listen(0) and got back goes to the next outgoing connection,
 * and a simulated fleet or an app binds its port moments or seconds later (EADDRINUSE on a
 * busy machine). Below that range only a deliberate bind takes a port.
 */
function laterListenPortRange(): [number, number] {
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (low !== undefined && Number.isInteger(low) && low > 12_000) return [10_000, low - 1];
  } catch {
    // not Linux: the range Linux uses by default
  }
  return [20_000, 32_767];
}

function tryListen(srv: net.Server, port: number, host: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" || err.code === "EACCES" ? resolve(false) : reject(err));
    srv.once("error", onError);
    srv.listen(port, host, () => {
      srv.off("error", onError);
      resolve(true);
    });
  });
}

/** `n` distinct free TCP ports on `host` (held open together, so never the same twice). */
export async function freeLocalPorts(n: number, exclude: ReadonlySet<number> = new Set(), host = "127.0.0.1"): Promise<number[]> {
  const [low, high] = laterListenPortRange();
  const held: net.Server[] = [];
  try {
    const ports: number[] = [];
    for (let tries = 0; ports.length < n; tries++) {
      if (tries > n * 50 + 1000) throw new Error(`no ${n} free local ports between ${low} and ${high}`);
      const port = low + Math.floor(Math.random() * (high - low + 1));
      if (exclude.has(port) || ports.includes(port)) continue;
      const srv = net.createServer();
      if (!(await tryListen(srv, port, host))) continue;
      held.push(srv);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
