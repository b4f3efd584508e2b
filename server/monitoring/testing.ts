/** Test helpers for monitoring (not used in production code). */
import type { AgentReport } from "@/core/monitoring-contract";

/** A healthy, quiet agent report; `over` sets what a test is about. */
export const agentReport = (over: Partial<AgentReport> = {}): AgentReport => ({
  listenerAlive: true,
  serviceRunning: true,
  usersOnline: 1,
  rxBps: 1000,
  txBps: 1000,
  cpu: 1,
  memory: 1,
  neighbours: [],
  ...over,
});
