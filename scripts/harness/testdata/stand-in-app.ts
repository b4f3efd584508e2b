/**
 * A stand-in for server/main.ts in the harness's tests: answers /api/health on PORT (after
 * STAND_IN_DELAY_MS), tells its PID at /pid, writes DATA_DIR/setup-code. STAND_IN_FAIL=1
 * exits at once with a message on stderr; STAND_IN_STUBBORN=1 ignores SIGTERM.
 */
import { writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";

if (process.env.STAND_IN_FAIL === "1") {
  process.stderr.write("stand-in: DATABASE_URL is not a postgres:// URL\n");
  process.exit(3);
}
writeFileSync(path.join(process.env.DATA_DIR!, "setup-code"), "ABCD-1234\n");
const readyAt = Date.now() + Number(process.env.STAND_IN_DELAY_MS ?? 0);
const server = http.createServer((req, res) => {
  if (req.url === "/api/health") {
    res.writeHead(Date.now() >= readyAt ? 200 : 503).end();
  } else if (req.url === "/pid") {
    res.end(String(process.pid));
  } else if (req.url === "/env") {
    res.end(JSON.stringify({ NODE_ENV: process.env.NODE_ENV, LOG_LEVEL: process.env.LOG_LEVEL, EXTRA: process.env.EXTRA }));
  } else {
    res.writeHead(404).end();
  }
});
server.listen(Number(process.env.PORT), "127.0.0.1");
process.on("SIGTERM", () => {
  if (process.env.STAND_IN_STUBBORN === "1") return;
  server.close(() => process.exit(0));
});
