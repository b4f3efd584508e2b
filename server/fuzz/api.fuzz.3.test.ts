// One shard of the API fuzz suite (server/fuzz/api-fuzz-suite.ts says why it is split).
import { fuzzShard } from "./api-fuzz-suite";

fuzzShard(2);
