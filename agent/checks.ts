/** TCP connect checks: the agent's own inbound ports (listenerAlive) and its neighbours (mesh). */
import net from "node:net";
import type { AgentNeighbour, NeighbourCheck } from "../core/agent-wire";
import { MAX_RTT_MS } from "../core/agent-wire";

export interface TcpResult {
  ok: boolean;
  rttMs: number | null;
  error?: string;
}

export function tcpConnect(host: string, port: number, timeoutMs: number): Promise<TcpResult> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect({ host, port });
    let done = false;
    const finish = (result: TcpResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ ok: false, rttMs: null, error: `no answer within ${timeoutMs} ms` }), timeoutMs);
    socket.once("connect", () => finish({ ok: true, rttMs: Math.min(MAX_RTT_MS, Math.round((performance.now() - started) * 10) / 10) }));
    socket.once("error", (err: NodeJS.ErrnoException) => finish({ ok: false, rttMs: null, error: err.code ?? err.message }));
  });
}

/** Timeout of one check: at most 2 s, and at most half the report interval. */
export function checkTimeoutMs(reportIntervalS: number): number {
  return Math.max(100, Math.min(2000, (reportIntervalS * 1000) / 2));
}

/** True when every served port accepts a TCP connection (false when none is served). */
export async function listenersAlive(ports: readonly number[], timeoutMs: number): Promise<boolean> {
  if (ports.length === 0) return false;
  const results = await Promise.all(ports.map((p) => tcpConnect("127.0.0.1", p, timeoutMs)));
  return results.every((r) => r.ok);
}

/** One check per neighbour, against its first inbound port; neighbours without ports are skipped. */
export async function checkNeighbours(neighbours: readonly AgentNeighbour[], timeoutMs: number): Promise<NeighbourCheck[]> {
  const withPort = neighbours.filter((n) => n.ports.length > 0);
  return Promise.all(
    withPort.map(async (n) => {
      const r = await tcpConnect(n.address, n.ports[0]!, timeoutMs);
      return { serverId: n.serverId, ok: r.ok, rttMs: r.ok ? r.rttMs : null };
    }),
  );
}
