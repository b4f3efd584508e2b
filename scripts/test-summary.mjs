// Prints one closing line for the whole suite ("N passed, N failed") from the Playwright JSON
// report and the vitest JSON reports (one per vitest process), so CI sees what ran.
// Usage: node scripts/test-summary.mjs PLAYWRIGHT_JSON VITEST_JSON...
import { readFileSync } from "node:fs";

let passed = 0;
let failed = 0;
let skipped = 0;
const [playwrightFile, ...vitestFiles] = process.argv.slice(2);
for (const vitestFile of vitestFiles) {
  try {
    const v = JSON.parse(readFileSync(vitestFile, "utf8"));
    passed += v.numPassedTests;
    failed += v.numFailedTests;
    skipped += v.numPendingTests + (v.numTodoTests ?? 0);
  } catch {
    failed += 1;
    console.error(`no vitest report at ${vitestFile}`);
  }
}
try {
  const p = JSON.parse(readFileSync(playwrightFile, "utf8"));
  passed += (p.stats.expected ?? 0) + (p.stats.flaky ?? 0);
  failed += p.stats.unexpected ?? 0;
  skipped += p.stats.skipped ?? 0;
} catch {
  failed += 1;
  console.error(`no Playwright report at ${playwrightFile}`);
}
console.log(`\nsuite: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 ? 1 : 0);
