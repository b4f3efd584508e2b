/** Sent in every report (agentVersion) and in the User-Agent; bump with agent changes. */
export const AGENT_VERSION = "0.1.0";
