"use client";
import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import type uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";
import { formatBps } from "@/core/format";
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
function Chart({ spec, points, stepMs, from, to, serverName }: { spec: ChartSpec; points: readonly Point[]; stepMs: number; from: number; to: number; serverName: string }) {
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
            { value: (_u, v) => (v == null ? "—" : new Date(v * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })) },
            ...spec.series.map((s) => ({
              label: s.label,
              stroke: cssColour(el, s.colourVar, s.fallback),
              width: 1.5,
              value: (_u: uPlot, v: number | null) => (v == null ? "—" : spec.format(v)),
            })),
          ],
          legend: { show: true },
          cursor: { drag: { x: false, y: false } },
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
      <div ref={box} role="img" aria-label={`${spec.title} of ${serverName} over the last 24 hours`} data-testid="history-chart" className="history-chart" />
    </figure>
  );
}

/** Each server's traffic and users over the last 24 hours (DESIGN §3's history), from the 5-minute buckets. */
export function HistoryCharts({ clusterId, servers }: { clusterId: string; servers: ReadonlyArray<{ id: string; name: string }> }) {
  const trpc = useTRPC();
  // Buckets are 5 minutes wide: once a minute keeps the newest point current.
  const history = useQuery({ ...trpc.monitoring.history.queryOptions({ clusterId }), refetchInterval: 60_000 });
  const data = history.data;
  const byId = new Map(data?.servers.map((s) => [s.serverId, s.points]) ?? []);
  const anyPoints = data?.servers.some((s) => s.points.length > 0) ?? false;
  return (
    <section aria-labelledby="health-history">
      <h2 id="health-history" className="mb-3 text-lg font-semibold">
        Last 24 hours
      </h2>
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
          No history yet: the charts fill in as the servers&apos; agents report (one point per 5 minutes).
        </p>
      ) : (
        <div className="grid gap-4 md:grid-cols-2 xl:grid-cols-3">
          {servers.map((s) => {
            const points = byId.get(s.id) ?? [];
            return (
              <article key={s.id} aria-label={`History of ${s.name}`} data-testid="server-history" className="min-w-0 rounded-lg border border-slate-200 bg-white p-3">
                <h3 className="mb-2 truncate text-sm font-semibold">{s.name}</h3>
                {points.length === 0 ? (
                  <p className="text-xs text-slate-500">No reports in the last 24 hours.</p>
                ) : (
                  <div className="flex flex-col gap-2">
                    <Chart spec={TRAFFIC} points={points} stepMs={data.stepMs} from={data.from} to={data.to} serverName={s.name} />
                    <Chart spec={USERS} points={points} stepMs={data.stepMs} from={data.from} to={data.to} serverName={s.name} />
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
