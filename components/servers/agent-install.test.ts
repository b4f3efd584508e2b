import { describe, expect, it } from "vitest";
import { agentOneLiner, agentSystemdUnit } from "./agent-install";

describe("agent install instructions", () => {
  it("downloads the bundle from the panel and starts it with the token", () => {
    expect(agentOneLiner("https://panel.example.com/", "rba_x")).toBe(
      "curl -fsSL https://panel.example.com/agent/routeboard-agent.mjs -o /usr/local/lib/routeboard-agent.mjs && ROUTEBOARD_URL=https://panel.example.com ROUTEBOARD_AGENT_TOKEN=rba_x node /usr/local/lib/routeboard-agent.mjs --core xray",
    );
  });
  it("gives a systemd unit with the token, restarts and a state directory", () => {
    const unit = agentSystemdUnit("https://panel.example.com", "rba_x", "v2ray");
    expect(unit).toContain("Environment=ROUTEBOARD_AGENT_TOKEN=rba_x\n");
    expect(unit).toContain("Environment=ROUTEBOARD_URL=https://panel.example.com\n");
    expect(unit).toContain("ExecStart=/usr/bin/env node /usr/local/lib/routeboard-agent.mjs --core v2ray\n");
    expect(unit).toContain("Restart=always\n");
    expect(unit).toContain("StateDirectory=routeboard-agent\n");
  });
});
