import { describe, expect, it } from "vitest";
import { DEFAULT_API_PORT, DEFAULT_STATE_DIR, parseArgs } from "./cli";

const base = ["--panel", "https://panel.example.com/", "--token", "tok", "--core", "v2ray"];

describe("parseArgs", () => {
  it("reads every flag, with defaults", () => {
    expect(parseArgs(base, {})).toEqual({
      kind: "run",
      options: { panel: "https://panel.example.com", token: "tok", core: "v2ray", coreBin: null, stateDir: DEFAULT_STATE_DIR, reportIntervalS: null, apiPort: DEFAULT_API_PORT },
    });
    const r = parseArgs([...base, "--core-bin", "/opt/v2ray", "--state-dir=/tmp/s", "--report-interval", "10", "--api-port", "20000"], {});
    expect(r).toMatchObject({ kind: "run", options: { coreBin: "/opt/v2ray", stateDir: "/tmp/s", reportIntervalS: 10, apiPort: 20000 } });
  });

  it("takes the panel and token from the environment; flags win", () => {
    const env = { ROUTEBOARD_URL: "http://env:3000", ROUTEBOARD_AGENT_TOKEN: "envtok" };
    expect(parseArgs(["--core", "xray"], env)).toMatchObject({ kind: "run", options: { panel: "http://env:3000", token: "envtok", core: "xray" } });
    expect(parseArgs(base, env)).toMatchObject({ kind: "run", options: { panel: "https://panel.example.com", token: "tok" } });
  });

  it("answers --help", () => {
    expect(parseArgs(["--core", "nope", "--help"], {})).toEqual({ kind: "help" });
  });

  it.each([
    [["--token", "t", "--core", "xray"], /^--panel: missing/],
    [["--panel", "ftp://x", "--token", "t", "--core", "xray"], /^--panel: expected an http/],
    [["--panel", "not a url", "--token", "t", "--core", "xray"], /^--panel: "not a url" is not a URL/],
    [["--panel", "http://x", "--core", "xray"], /^--token: missing/],
    [["--panel", "http://x", "--token", "t"], /^--core: missing/],
    [["--panel", "http://x", "--token", "t", "--core", "sing-box"], /^--core: expected xray or v2ray, got "sing-box"/],
    [[...base, "--report-interval", "0"], /^--report-interval: expected whole seconds/],
    [[...base, "--report-interval", "1.5"], /^--report-interval/],
    [[...base, "--api-port", "70000"], /^--api-port: expected a port/],
    [[...base, "--state-dir"], /^--state-dir: needs a value/],
    [[...base, "--verbose"], /^--verbose: unknown flag/],
  ])("%j fails naming the flag", (argv, message) => {
    const r = parseArgs(argv, {});
    expect(r.kind).toBe("error");
    if (r.kind === "error") {
      expect(r.message).toMatch(message);
      expect(r.message).not.toContain("\n");
    }
  });
});
