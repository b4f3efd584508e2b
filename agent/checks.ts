/** TCP connect checks: the agent's own inbound ports (listenerAlive) and its neighbours (mesh). */
import net from "node:net";
import type { AgentNeighbour, ListenerDown, NeighbourCheck } from "../core/agent-wire";
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

/**
 * The listener check: each served inbound's port gets a TCP connect on 127.0.0.1. `alive` when
 * every one accepts (false when none is served); `down` names those that did not, so the panel
 * takes just them out of the balancer's choice (issue 25).
 */
export async function checkListeners(inbounds: ReadonlyArray<{ inboundId: string; port: number }>, timeoutMs: number): Promise<{ alive: boolean; down: ListenerDown[] }> {
  const results = await Promise.all(inbounds.map((i) => tcpConnect("127.0.0.1", i.port, timeoutMs)));
  const down: ListenerDown[] = [];
  results.forEach((r, k) => {
    if (!r.ok) down.push({ inboundId: inbounds[k]!.inboundId, port: inbounds[k]!.port, error: (r.error ?? "no connection").slice(0, 200) });
  });
  return { alive: inbounds.length > 0 && down.length === 0, down };
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
