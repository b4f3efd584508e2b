/** npx tsx scripts/bench-core.ts — prints the balancer core benchmark as JSON. */
import { benchCore } from "@/scripts/bench/core";

process.stdout.write(`${JSON.stringify(benchCore())}\n`);
