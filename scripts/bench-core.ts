/** npx tsx scripts/bench-core.ts — prints the balancer core benchmark as JSON. */
import { benchCore } from "@/server/balancer/bench";

process.stdout.write(`${JSON.stringify(benchCore())}\n`);
