#!/usr/bin/env node
// A stand-in for the xray binary (not installed here) that behaves like Xray-core where the
// agent depends on it:
// - `xray version` prints Xray's two version lines; the version is $FAKE_XRAY_VERSION
//   (default 26.7.28), so tests can run a matrix of versions.
// - `run -test -c` checks the config (a "reject-me" dest fails; REALITY's minClientVer is
//   parsed as Xray's infra/conf does; an h2 (`network: "http"`) inbound fails the whole config,
//   as in every Xray since 24.12); `run -c` holds the running core's state: its users per
//   inbound (their emails) and its StatsService counters, which, as in the real core, are never removed (a
//   user removed with rmu keeps them) and are read and reset by substring pattern.
// - `api adu` / `rmu` / `statsquery` talk to the running core over its API port, as the real
//   CLI does (over HTTP instead of gRPC). adu/rmu are unknown commands before 25.7.26, as in
//   the real CLI. statsquery fails like grpc-go's client when the reply exceeds its 4 MiB
//   receive limit, after the core has reset what matched.
// Test hooks on the API port (no real core has them): POST /traffic [[email, up, down], …]
// counts traffic for known users; POST /reality {tag, clientVersion} says whether REALITY
// would let a client of that version in. $FAKE_XRAY_FAULTS names a JSON file
// {"<pattern>": <failures left>} that makes statsquery fail (before any reset). Each call is
// appended to $FAKE_XRAY_LOG.
// Cheap at a million users (npm run bench:agent-core): the clients arrays are never parsed into
// objects (readConfig), so the stand-in's test and start cost a scan of the file, not two parses.
import fs from "node:fs";
import http from "node:http";
import net from "node:net";

const args = process.argv.slice(2);
const VERSION = process.env.FAKE_XRAY_VERSION ?? "26.7.28";
const logFile = process.env.FAKE_XRAY_LOG;
const record = (line) => logFile && fs.appendFileSync(logFile, `${line}\n`);
const RECEIVE_LIMIT = 4 * 1024 * 1024;

const versionOf = (s) => s.split(".").map(Number);
const atLeast = (v, min) => {
  for (let i = 0; i < 3; i++) if ((v[i] ?? 0) !== min[i]) return (v[i] ?? 0) > min[i];
  return true;
};
const ours = versionOf(VERSION);

function fail(message, code = 1) {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

/** REALITY's minClientVer as infra/conf/transport_security.go builds it: bytes, or an error. */
function minClientVer(reality) {
  if (reality.minClientVer === undefined || reality.minClientVer === "") return atLeast(ours, [26, 7, 11]) ? [26, 3, 27] : null;
  const parts = String(reality.minClientVer).split(".");
  if (parts.length > 3) throw new Error(`invalid "minClientVer": ${reality.minClientVer}`);
  const out = [0, 0, 0];
  parts.forEach((p, i) => {
    if (!/^\d+$/.test(p) || Number(p) > 255) throw new Error(`"minClientVer[${i}]" should be less than 256`);
    out[i] = Number(p);
  });
  return out;
}

function realityOf(inbound) {
  return inbound.streamSettings?.security === "reality" ? inbound.streamSettings.realitySettings : null;
}

function serverOf(argv) {
  const flag = argv.find((a) => a.startsWith("--server=") || a.startsWith("-server=") || a.startsWith("-s="));
  return flag ? flag.slice(flag.indexOf("=") + 1) : "127.0.0.1:8080";
}

/**
 * One API call to the running stand-in. The answer is the CLI's output, made by the long-running
 * core process, so this short-lived client (started once per query, like the real CLI) does
 * little: 200 → stdout, anything else → stderr and exit 1.
 */
function call(argv, path, body) {
  const server = serverOf(argv);
  const [host, port] = [server.slice(0, server.lastIndexOf(":")), Number(server.slice(server.lastIndexOf(":") + 1))];
  const req = http.request({ host, port, path, method: "POST", headers: { "content-type": "application/json" } }, (res) => {
    const out = res.statusCode === 200 ? process.stdout : process.stderr;
    res.pipe(out);
    res.on("end", () => {
      if (res.statusCode !== 200) process.exitCode = 1;
    });
  });
  req.on("error", () => fail(`failed to dial ${server}`));
  req.end(JSON.stringify(body));
}

const varintLen = (n) => (n < 128 ? 1 : n < 16384 ? 2 : n < 2097152 ? 3 : n < 268435456 ? 4 : Math.ceil(Math.log2(n + 1) / 7));

/** The size of a QueryStatsResponse on the wire (what grpc-go compares with its limit). */
function replyBytes(stats) {
  let total = 0;
  for (const s of stats) {
    const name = Buffer.byteLength(s.name);
    const len = 1 + varintLen(name) + name + (s.value ? 1 + varintLen(s.value) : 0);
    total += 1 + varintLen(len) + len;
  }
  return total;
}

/** Where the JSON string starting at `i` (its opening quote) ends: the index after its closing quote. */
function afterString(text, i) {
  for (let end = text.indexOf('"', i + 1); end !== -1; end = text.indexOf('"', end + 1)) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === 92) slashes++;
    if (slashes % 2 === 0) return end + 1;
  }
  throw new SyntaxError("Unterminated string in JSON");
}

/**
 * The config file with every "clients" array set aside, and those arrays' texts: a million
 * users' config is parsed without a million client objects. Only the structure between strings
 * is walked (strings are skipped with indexOf), so this costs a fraction of JSON.parse; the rest
 * of the file goes through JSON.parse and fails as it would. Each array is replaced by
 * {"clientsText": k}, k its index in `clients`.
 */
function readConfig(file) {
  const text = fs.readFileSync(file, "utf8");
  const clients = [];
  let rest = "";
  let from = 0;
  for (let at = text.indexOf('"clients"'); at !== -1; at = text.indexOf('"clients"', at + 1)) {
    let i = at + 9;
    while (/\s/.test(text[i] ?? "")) i++;
    if (text[i] !== ":") continue;
    i++;
    while (/\s/.test(text[i] ?? "")) i++;
    if (text[i] !== "[") continue;
    const start = i;
    let depth = 0;
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 34) i = afterString(text, i) - 1;
      else if (c === 91 || c === 123) depth++;
      else if ((c === 93 || c === 125) && --depth === 0) break;
    }
    if (depth !== 0) throw new SyntaxError("Unexpected end of JSON input");
    rest += `${text.slice(from, start)}{"clientsText":${clients.length}}`;
    clients.push(text.slice(start, i + 1));
    from = i + 1;
    at = i;
  }
  return { config: JSON.parse(rest + text.slice(from)), text, clients };
}

/** The emails of one "clients" array's text: each "email" key's string, found with indexOf, not a parse. */
function emailsOf(clientsText) {
  const emails = new Set();
  for (let at = clientsText.indexOf('"email"'); at !== -1; at = clientsText.indexOf('"email"', at + 7)) {
    let i = at + 7;
    while (/[\s:]/.test(clientsText[i] ?? "")) i++;
    if (clientsText[i] !== '"') continue;
    const end = afterString(clientsText, i);
    const raw = clientsText.slice(i + 1, end - 1);
    emails.add(raw.includes("\\") ? JSON.parse(clientsText.slice(i, end)) : raw);
    at = end - 7;
  }
  return emails;
}

function runCore(file) {
  const { config, clients } = readConfig(file);
  const api = config.inbounds.find((i) => i.tag === config.api?.tag);
  const inbounds = new Map(
    config.inbounds
      .filter((i) => i.settings?.clients)
      .map((i) => [i.tag, { users: emailsOf(clients[i.settings.clients.clientsText]), minVer: realityOf(i) ? minClientVer(realityOf(i)) : null }]),
  );
  const counters = new Map();
  const known = (email) => {
    for (const i of inbounds.values()) if (i.users.has(email)) return true;
    return false;
  };
  const handlers = {
    "/adu": ({ inbounds: list }) => {
      let added = 0;
      const lines = [];
      for (const i of list) {
        const inbound = inbounds.get(i.tag);
        lines.push(`processing inbound: ${i.tag}`);
        if (!inbound) {
          lines.push("failed to get inbound instance: handler not found");
          continue;
        }
        for (const c of i.settings.clients) {
          lines.push(`add user: ${c.email}`);
          if (inbound.users.has(c.email)) lines.push(`User ${c.email} already exists.`);
          else {
            inbound.users.add(c.email);
            added++;
          }
        }
      }
      return { out: [...lines, `Added ${added} user(s) in total.`].join("\n") };
    },
    "/rmu": ({ tag, emails }) => {
      const inbound = inbounds.get(tag);
      if (!inbound) return { out: "failed to get inbound instance: handler not found\nRemoved 0 user(s) in total." };
      let removed = 0;
      const lines = [];
      for (const email of emails) {
        lines.push(`remove user: ${email}`);
        if (inbound.users.delete(email)) removed++;
        else lines.push(`User ${email} not found.`);
      }
      return { out: [...lines, `Removed ${removed} user(s) in total.`].join("\n") };
    },
    "/statsquery": ({ pattern, reset }) => {
      const faultsFile = process.env.FAKE_XRAY_FAULTS;
      if (faultsFile && fs.existsSync(faultsFile)) {
        const faults = JSON.parse(fs.readFileSync(faultsFile, "utf8"));
        if (faults[pattern] > 0) {
          faults[pattern]--;
          fs.writeFileSync(faultsFile, JSON.stringify(faults));
          return { err: "failed to query stats: rpc error: code = Unavailable desc = injected by the test" };
        }
      }
      const stat = [];
      for (const [name, value] of counters) {
        if (!name.includes(pattern)) continue;
        if (reset) counters.set(name, 0);
        stat.push(value ? { name, value } : { name });
      }
      // The core reset what matched; the client then refuses a reply over its limit.
      const size = replyBytes(stat);
      if (size > RECEIVE_LIMIT) return { err: `failed to query stats: rpc error: code = ResourceExhausted desc = grpc: received message larger than max (${size} vs. ${RECEIVE_LIMIT})` };
      // Go's encoding/json with a 4-space indent; empty fields left out, as Xray's MarshalToJson does.
      return { out: JSON.stringify(stat.length > 0 ? { stat } : {}, null, 4) };
    },
    "/traffic": (rows) => {
      let counted = 0;
      for (const [email, up, down] of rows) {
        if (!known(email)) continue;
        const base = `user>>>${email}>>>traffic>>>`;
        counters.set(`${base}uplink`, (counters.get(`${base}uplink`) ?? 0) + up);
        counters.set(`${base}downlink`, (counters.get(`${base}downlink`) ?? 0) + down);
        counted++;
      }
      return { json: { counted } };
    },
    "/reality": ({ tag, clientVersion }) => {
      const min = inbounds.get(tag)?.minVer;
      return { json: { admitted: !min || atLeast(versionOf(clientVersion), min) } };
    },
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const handler = handlers[req.url];
      const answer = handler ? handler(JSON.parse(Buffer.concat(chunks).toString("utf8"))) : { err: `fake xray: no ${req.url}` };
      if (answer.json) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(answer.json));
      } else {
        res.writeHead(answer.err ? 500 : 200, { "content-type": "text/plain" });
        res.end(`${answer.err ?? answer.out}\n`);
      }
    });
  });
  // The inbounds accept connections (the agent checks its listeners); best effort, as tests may
  // name ports they cannot bind.
  for (const i of config.inbounds) {
    if (i === api || !i.port) continue;
    const listener = net.createServer((socket) => socket.destroy());
    listener.on("error", () => {});
    listener.listen(i.port, i.listen ?? "0.0.0.0");
  }
  server.listen(api.port, api.listen ?? "127.0.0.1", () => {
    // Recorded once the API answers, so a test waiting for this line can use the API.
    record(`run ${file}`);
    console.log(`Xray ${VERSION} started`);
  });
}

function main() {
  if (args[0] === "version") {
    console.log(`Xray ${VERSION} (Xray, Penetrates Everything.) Custom (go1.24.5 linux/amd64)\nA unified platform for anti-censorship.`);
  } else if (args[0] === "run" && args[1] === "-test") {
    const { config, text } = readConfig(args[3]);
    if (text.includes("reject-me")) fail("Failed to start: main: failed to load config files > reject-me is not a valid dest", 23);
    for (const i of config.inbounds) {
      // Removed in 24.12: the whole config fails to load, every inbound with it.
      if (["http", "h2"].includes(i.streamSettings?.network)) {
        fail(`Failed to start: main: failed to load config files: [${args[3]}] > infra/conf: failed to build stream settings > common/errors: The feature HTTP transport (without header padding, etc.) has been removed and migrated to XHTTP stream-one H2 & H3. Please update your config(s) according to release note and documentation.`, 23);
      }
      const reality = realityOf(i);
      if (!reality) continue;
      try {
        if (reality.minClientVer === undefined && atLeast(ours, [26, 7, 11])) console.log("[Warning] REALITY: The default minimal client version is Xray-core v26.3.27, other clients may be refused to connect");
        minClientVer(reality);
      } catch (err) {
        fail(`Failed to start: main: failed to load config files: [${args[3]}] > infra/conf: ${err.message}`, 23);
      }
    }
    console.log("Configuration OK.");
  } else if (args[0] === "run") {
    runCore(args[2]);
  } else if (args[0] === "api" && (args[1] === "adu" || args[1] === "rmu") && !atLeast(ours, [25, 7, 26])) {
    fail(`xray api ${args[1]}: unknown command\nRun 'xray help api' for usage.`, 2);
  } else if (args[0] === "api" && args[1] === "adu") {
    const files = args.slice(2).filter((a) => !a.startsWith("-"));
    const list = files.flatMap((f) => JSON.parse(fs.readFileSync(f, "utf8")).inbounds);
    for (const i of list) record(`adu ${i.tag} ${i.settings.clients.map((c) => `${c.email}:${c.flow ?? ""}`).join(",")}`);
    call(args, "/adu", { inbounds: list });
  } else if (args[0] === "api" && args[1] === "rmu") {
    const tag = args.find((a) => a.startsWith("-tag="))?.slice(5);
    if (!tag) fail("inbound tag not specified");
    const emails = args.slice(2).filter((a) => !a.startsWith("-"));
    record(`rmu -tag=${tag} ${emails.join(",")}`);
    call(args, "/rmu", { tag, emails });
  } else if (args[0] === "api" && args[1] === "statsquery") {
    record(`statsquery ${args.slice(2).join(" ")}`);
    const k = args.indexOf("-pattern");
    call(args, "/statsquery", { pattern: k >= 0 ? args[k + 1] : "", reset: args.includes("-reset") });
  } else {
    fail(`fake xray: unknown command ${args.join(" ")}`, 2);
  }
}

main();
