/**
 * A small Prometheus registry: counters and gauges with labels, rendered in the text
 * exposition format at GET /metrics. Lives on globalThis (one per process).
 */
type Labels = Record<string, string>;

interface Family {
  help: string;
  type: "counter" | "gauge";
  values: Map<string, { labels: Labels; value: number }>;
  /** Gauges computed when scraped. */
  collect?: () => Array<{ labels: Labels; value: number }>;
}

const KEY = Symbol.for("routeboard.metrics");
function families(): Map<string, Family> {
  const g = globalThis as typeof globalThis & { [KEY]?: Map<string, Family> };
  g[KEY] ??= new Map();
  return g[KEY];
}

function family(name: string, type: Family["type"], help: string): Family {
  let f = families().get(name);
  if (!f) {
    f = { help, type, values: new Map() };
    families().set(name, f);
  }
  return f;
}

/**
 * A label set's key: its pairs in key order. Built in one pass when the keys already come in
 * order, as call sites write them (a sort and three arrays per increment were a tenth of what
 * each config answer left for the garbage collector, two thousand a second at a thousand agents).
 */
function labelKey(labels: Labels): string {
  let key = "";
  let previous = "";
  for (const k in labels) {
    if (k < previous) return Object.entries(labels).sort().map(([name, v]) => `${name}=${v}`).join(",");
    key += `${key ? "," : ""}${k}=${labels[k]}`;
    previous = k;
  }
  return key;
}

export function counter(name: string, help: string) {
  const f = family(name, "counter", help);
  return {
    inc(labels: Labels = {}, by = 1) {
      const k = labelKey(labels);
      const cur = f.values.get(k);
      if (cur) cur.value += by;
      else f.values.set(k, { labels, value: by });
    },
  };
}

export function gauge(name: string, help: string, collect: () => Array<{ labels: Labels; value: number }> | number) {
  const f = family(name, "gauge", help);
  f.collect = () => {
    const v = collect();
    return typeof v === "number" ? [{ labels: {}, value: v }] : v;
  };
}

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

export function renderMetrics(): string {
  const out: string[] = [];
  for (const [name, f] of families()) {
    out.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`);
    const samples = f.collect ? f.collect() : [...f.values.values()];
    for (const s of samples) {
      const l = Object.entries(s.labels);
      const labels = l.length ? `{${l.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}` : "";
      out.push(`${name}${labels} ${Number.isFinite(s.value) ? s.value : 0}`);
    }
  }
  return out.join("\n") + "\n";
}
