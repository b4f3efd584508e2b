/**
 * Agent reports for specs that play an agent: the body a healthy, lightly loaded server
 * sends, and the POST to the agents' own endpoint with a server's token.
 */
import type { APIRequestContext } from "@playwright/test";
import type { AgentReport } from "../core/agent-wire";

/** A healthy server's report (one user online, 1 MB/s each way), with `fields` on top (instance, seq, users, …). */
export function healthyReport(fields: Partial<AgentReport> = {}): AgentReport {
  return { listenerAlive: true, serviceRunning: true, usersOnline: 1, rxBps: 1e6, txBps: 1e6, cpu: 5, memory: 10, neighbours: [], ...fields };
}

/** POST /api/agent/report as the server whose agent token this is. */
export function postAgentReport(request: APIRequestContext, agentToken: string, report: AgentReport) {
  return request.post("/api/agent/report", { headers: { authorization: `Bearer ${agentToken}` }, data: report });
}
