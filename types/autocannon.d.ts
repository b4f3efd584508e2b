// The parts of autocannon's API that our benchmarks use (it ships no types of its own).
declare module "autocannon" {
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
    total: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    non2xx: number;
    errors: number;
    timeouts: number;
    "2xx": number;
    "4xx": number;
    "5xx": number;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    requests?: Array<{ method?: string; path?: string; headers?: Record<string, string> }>;
  }
  interface Instance extends Promise<Result> {
    on(event: "response", listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
  }
  function autocannon(opts: Options): Instance;
  export default autocannon;
}
