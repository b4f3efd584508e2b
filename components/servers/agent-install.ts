/**
 * What the server dialog tells an operator to run on a VPN server: a one-liner that downloads
 * the agent bundle from the panel and starts it, and a systemd unit. Pure, so it is tested
 * and the README can show the same text.
 */
export const AGENT_BUNDLE_PATH = "/agent/routeboard-agent.mjs";
export const AGENT_INSTALL_PATH = "/usr/local/lib/routeboard-agent.mjs";
export const SYSTEMD_UNIT_PATH = "/etc/systemd/system/routeboard-agent.service";

export function panelBase(url: string): string {
  return url.replace(/\/+$/, "");
}

export function agentOneLiner(panelUrl: string, token: string, core: "xray" | "v2ray" = "xray"): string {
  const base = panelBase(panelUrl);
  return `curl -fsSL ${base}${AGENT_BUNDLE_PATH} -o ${AGENT_INSTALL_PATH} && ROUTEBOARD_URL=${base} ROUTEBOARD_AGENT_TOKEN=${token} node ${AGENT_INSTALL_PATH} --core ${core}`;
}

/**
 * Restart=always keeps the agent (and so the core) up; exit codes 2 (bad flags) and 3 (token
 * refused) are not retried, since a restart cannot fix them. StateDirectory creates
 * /var/lib/routeboard-agent, the agent's default --state-dir.
 */
export function agentSystemdUnit(panelUrl: string, token: string, core: "xray" | "v2ray" = "xray"): string {
  const base = panelBase(panelUrl);
  return `[Unit]
Description=Routeboard agent: runs the VPN core with the panel's config and reports to it
Wants=network-online.target
After=network-online.target

[Service]
Environment=ROUTEBOARD_URL=${base}
Environment=ROUTEBOARD_AGENT_TOKEN=${token}
ExecStart=/usr/bin/env node ${AGENT_INSTALL_PATH} --core ${core}
Restart=always
RestartSec=5
RestartPreventExitStatus=2 3
StateDirectory=routeboard-agent
StateDirectoryMode=0700

[Install]
WantedBy=multi-user.target
`;
}
