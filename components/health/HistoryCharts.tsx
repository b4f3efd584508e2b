"use client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import type uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";
import { formatBps } from "@/core/format";
import { DEFAULT_HISTORY_RANGE, HISTORY_RANGE_LABELS, HISTORY_RANGE_MS, HISTORY_RANGES, type HistoryRange } from "@/core/monitoring-contract";
import { Skeleton } from "@/components/ui/Skeleton";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@/server/api/root";

type History = inferRouterOutputs<AppRouter>["monitoring"]["history"];
type Point = History["servers"][number]["points"][number];

/**
 * Columns for uPlot: x in seconds, one array per series, with a null wherever two points are
 * more than a step apart so the line breaks there instead of bridging hours without data.
 */
export function chartColumns(points: readonly Point[], stepMs: number, pick: ReadonlyArray<(p: Point) => number>): [number[], ...(number | null)[][]] {
  const xs: number[] = [];
  const ys: (number | null)[][] = pick.map(() => []);
  let prev: number | null = null;
  for (const p of points) {
    if (prev !== null && p.t - prev > stepMs) {
      xs.push((prev + stepMs) / 1000);
      ys.forEach((col) => col.push(null));
    }
    xs.push(p.t / 1000);
    pick.forEach((f, i) => ys[i]!.push(f(p)));
    prev = p.t;
  }
  return [xs, ...ys];
}

/** The charts' colours come from CSS variables so the dark theme can set its own. */
function cssColour(el: Element, name: string, fallback: string): string {
  const v = getComputedStyle(el).getPropertyValue(name).trim();
  return v || fallback;
}

interface ChartSpec {
  title: string;
  series: Array<{ label: string; colourVar: string; fallback: string; pick: (p: Point) => number }>;
  format: (v: number) => string;
}

const TRAFFIC: ChartSpec = {
  title: "Traffic",
  series: [
    { label: "↓ rx", colourVar: "--chart-rx", fallback: "#2563eb", pick: (p) => p.rxBpsAvg },
    { label: "↑ tx", colourVar: "--chart-tx", fallback: "#16a34a", pick: (p) => p.txBpsAvg },
  ],
  format: formatBps,
};
const USERS: ChartSpec = {
  title: "Users online",
  series: [{ label: "users", colourVar: "--chart-users", fallback: "#9333ea", pick: (p) => p.usersAvg }],
  format: (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1)),
};

/** One small uPlot chart, sized to its container and redrawn when the colour scheme changes. */
function Chart({ spec, points, stepMs, from, to, serverName, over }: { spec: ChartSpec; points: readonly Point[]; stepMs: number; from: number; to: number; serverName: string; over: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    let plot: uPlot | null = null;
    let cancelled = false;
    const dark = window.matchMedia("(prefers-color-scheme: dark)");
    const draw = async () => {
      const { default: UPlot } = await import("uplot");
      if (cancelled) return;
      plot?.destroy();
      const text = getComputedStyle(el).color;
      const grid = cssColour(el, "--chart-grid", "rgba(148, 163, 184, 0.25)");
      const axis: uPlot.Axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: "10px system-ui, sans-serif" };
      plot = new UPlot(
        {
          width: Math.max(160, el.clientWidth),
          height: 110,
          scales: { x: { time: true, range: () => [from / 1000, to / 1000] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
          axes: [
            { ...axis, space: 60 },
            // Wide enough for "100.0 Mbit/s".
            { ...axis, size: 80, values: (_u, vals) => vals.map((v) => spec.format(v)) },
          ],
          series: [
            {
              // Beyond a day the time alone is ambiguous: the day goes with it.
              value: (_u, v) =>
                v == null
                  ? "—"
                  : new Date(v * 1000).toLocaleString([], { ...(to - from > HISTORY_RANGE_MS["24h"] ? { weekday: "short" as const } : {}), hour: "2-digit", minute: "2-digit" }),
            },
            ...spec.series.map((s) => ({
              label: s.label,
              stroke: cssColour(el, s.colourVar, s.fallback),
              width: 1.5,
              value: (_u: uPlot, v: number | null) => (v == null ? "—" : spec.format(v)),
            })),
          ],
          legend: { show: true },
          cursor: { drag: { x: false, y: false } },
          // The span the x axis was drawn over, for whoever checks the chart follows the chosen range.
          hooks: {
            setScale: [
              (u, key) => {
                if (key !== "x") return;
                el.dataset.xMin = String(u.scales.x!.min);
                el.dataset.xMax = String(u.scales.x!.max);
              },
            ],
          },
        },
        chartColumns(
          points,
          stepMs,
          spec.series.map((s) => s.pick),
        ) as uPlot.AlignedData,
        el,
      );
    };
    void draw();
    const resize = new ResizeObserver(() => plot?.setSize({ width: Math.max(160, el.clientWidth), height: 110 }));
    resize.observe(el);
    const redraw = () => void draw();
    dark.addEventListener("change", redraw);
    return () => {
      cancelled = true;
      resize.disconnect();
      dark.removeEventListener("change", redraw);
      plot?.destroy();
    };
  }, [spec, points, stepMs, from, to]);
  return (
    <figure className="min-w-0">
      <figcaption className="text-xs font-medium text-slate-500">{spec.title}</figcaption>
      <div ref={box} role="img" aria-label={`${spec.title} of ${serverName} over the last ${over}`} data-testid="history-chart" className="history-chart" />
    </figure>
  );
}

/** Each server's traffic and users over a chosen range (DESIGN §3's history, 24 h first), from the 5-minute buckets. */
export function HistoryCharts({ clusterId, servers }: { clusterId: string; servers: ReadonlyArray<{ id: string; name: string }> }) {
  const trpc = useTRPC();
  const [range, setRange] = useState<HistoryRange>(DEFAULT_HISTORY_RANGE);
  const over = HISTORY_RANGE_LABELS[range].long;
  // Buckets are 5 minutes wide: once a minute keeps the newest point current.
  // The charts of the range before stay up while the new one loads (no flash of skeletons).
  const history = useQuery({ ...trpc.monitoring.history.queryOptions({ clusterId, range }), refetchInterval: 60_000, placeholderData: keepPreviousData });
  const data = history.data;
  const byId = new Map(data?.servers.map((s) => [s.serverId, s.points]) ?? []);
  const anyPoints = data?.servers.some((s) => s.points.length > 0) ?? false;
  return (
    <section aria-labelledby="health-history">
      <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
        <h2 id="health-history" className="text-lg font-semibold">
          Last {over}
        </h2>
        <div role="group" aria-label="History range" className="inline-flex rounded-md border border-slate-300 bg-white p-0.5 text-sm">
          {HISTORY_RANGES.map((r) => (
            <button
              key={r}
              type="button"
              aria-pressed={range === r}
              aria-label={`Last ${HISTORY_RANGE_LABELS[r].long}`}
              onClick={() => setRange(r)}
              className={`rounded px-2.5 py-1 font-medium ${range === r ? "bg-sky-600 text-white" : "text-slate-600 hover:bg-slate-100"}`}
            >
              {HISTORY_RANGE_LABELS[r].short}
            </button>
          ))}
        </div>
      </div>
      {history.error ? (
        <p role="alert" className="text-red-700">
          {errorMessage(history.error)}
        </p>
      ) : !data ? (
        <div className="grid gap-4 md:grid-cols-2 xl:grid-cols-3" aria-busy="true">
          {servers.slice(0, 3).map((s) => (
            <Skeleton key={s.id} className="h-64" />
          ))}
        </div>
      ) : !anyPoints ? (
        <p className="rounded-lg border border-dashed border-slate-300 p-4 text-sm text-slate-500" data-testid="history-empty">
          {range === DEFAULT_HISTORY_RANGE ? "No history yet" : `No reports in the last ${over}`}: the charts fill in as the servers&apos; agents report (one point per 5
          minutes).
        </p>
      ) : (
        <div className="grid gap-4 md:grid-cols-2 xl:grid-cols-3">
          {servers.map((s) => {
            const points = byId.get(s.id) ?? [];
            return (
              <article key={s.id} aria-label={`History of ${s.name}`} data-testid="server-history" className="min-w-0 rounded-lg border border-slate-200 bg-white p-3">
                <h3 className="mb-2 truncate text-sm font-semibold">{s.name}</h3>
                {points.length === 0 ? (
                  <p className="text-xs text-slate-500">No reports in the last {over}.</p>
                ) : (
                  <div className="flex flex-col gap-2">
                    <Chart spec={TRAFFIC} points={points} stepMs={data.stepMs} from={data.from} to={data.to} serverName={s.name} over={over} />
                    <Chart spec={USERS} points={points} stepMs={data.stepMs} from={data.from} to={data.to} serverName={s.name} over={over} />
                  </div>
                )}
              </article>
            );
          })}
        </div>
      )}
    </section>
  );
}
