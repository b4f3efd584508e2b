#!/usr/bin/env node
// A stand-in for the xray binary (not installed here): answers the commands the agent uses
// (version, run -test -c, run -c, api adu/rmu/statsquery) the way Xray-core prints them, and
// appends each call to $FAKE_XRAY_LOG so tests can check what the agent asked for.
import fs from "node:fs";

const args = process.argv.slice(2);
const logFile = process.env.FAKE_XRAY_LOG;
const record = (line) => logFile && fs.appendFileSync(logFile, `${line}\n`);

if (args[0] === "version") {
  console.log("Xray 25.1.1 (Xray, Penetrates Everything.) Custom (go1.23.4 linux/amd64)");
} else if (args[0] === "run" && args[1] === "-test") {
  const text = fs.readFileSync(args[3], "utf8");
  JSON.parse(text);
  if (text.includes("reject-me")) {
    console.log("Failed to start: main: failed to load config files > reject-me is not a valid dest");
    process.exit(23);
  }
  console.log("Configuration OK.");
} else if (args[0] === "run") {
  record(`run ${args[2]}`);
  console.log("Xray 25.1.1 started");
  setInterval(() => {}, 1000);
} else if (args[0] === "api" && args[1] === "adu") {
  const config = JSON.parse(fs.readFileSync(args[3], "utf8"));
  const clients = config.inbounds[0].settings.clients;
  record(`adu ${config.inbounds[0].tag} ${clients.map((c) => `${c.email}:${c.flow ?? ""}`).join(",")}`);
  console.log(`Added ${clients.length} user(s) in total.`);
} else if (args[0] === "api" && args[1] === "rmu") {
  const emails = args.slice(4);
  record(`rmu ${args[3]} ${emails.join(",")}`);
  console.log(`Removed ${emails.length} user(s) in total.`);
} else if (args[0] === "api" && args[1] === "statsquery") {
  record(`statsquery ${args.slice(2).join(" ")}`);
  console.log(JSON.stringify({ stat: [{ name: "user>>>sub-alice>>>traffic>>>uplink", value: 5 }, { name: "user>>>sub-alice>>>traffic>>>downlink", value: "7" }] }, null, 2));
} else {
  console.error(`fake xray: unknown command ${args.join(" ")}`);
  process.exit(2);
}
