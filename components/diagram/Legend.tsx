"use client";
import { useId, useRef, useState } from "react";
import { routeColor, statusStyle } from "@/core/format";
import { SERVER_STATUSES } from "@/core/status";
import { DOWN_DASH, NO_LINE_DASH, PANIC_COLOR } from "./flow";

function Line({ color, width, dash }: { color: string; width: number; dash?: string }) {
  return (
    <svg aria-hidden viewBox="0 0 36 10" className="h-2.5 w-9 shrink-0">
      <line x1="1" y1="5" x2="35" y2="5" stroke={color} strokeWidth={width} strokeDasharray={dash} strokeLinecap="round" />
    </svg>
  );
}

function Swatch({ className, style }: { className: string; style?: React.CSSProperties }) {
  return <span aria-hidden className={`inline-block h-4 w-7 shrink-0 rounded ${className}`} style={style} />;
}

/**
 * What the diagram's colours, dashes and dots mean. Collapsed by default so it covers
 * nothing; a button opens it, Escape or the button closes it.
 */
export function Legend() {
  const [open, setOpen] = useState(false);
  const id = useId();
  const button = useRef<HTMLButtonElement>(null);
  const color = routeColor(0);
  return (
    <div
      className="absolute right-3 top-3 z-10 flex max-w-[calc(100%-1.5rem)] flex-col items-end text-xs text-slate-700"
      onKeyDown={(e) => {
        if (e.key === "Escape" && open) {
          e.stopPropagation();
          setOpen(false);
          button.current?.focus();
        }
      }}
    >
      <button
        ref={button}
        type="button"
        aria-expanded={open}
        aria-controls={id}
        onClick={() => setOpen((v) => !v)}
        className="flex items-center gap-1.5 rounded-md border border-slate-300 bg-white px-2.5 py-1 font-medium text-slate-700 shadow-sm hover:bg-slate-50 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-sky-600"
      >
        <svg aria-hidden viewBox="0 0 20 20" className={`h-3.5 w-3.5 transition-transform ${open ? "rotate-90" : ""}`} fill="currentColor">
          <path d="M7 5l6 5-6 5V5Z" />
        </svg>
        Legend
      </button>
      {open && (
        <section
          id={id}
          aria-label="Legend"
          // Focusable, so a click inside keeps Escape working.
          tabIndex={-1}
          className="mt-1.5 max-h-[min(70vh,520px)] w-80 max-w-full overflow-auto rounded-lg border border-slate-200 bg-white p-3 shadow-xl focus:outline-none"
        >
          <h3 className="mb-1 font-semibold text-slate-900">Server status</h3>
          <ul className="mb-3 grid grid-cols-1 gap-1">
            {SERVER_STATUSES.map((s) => {
              const st = statusStyle(s);
              return (
                <li key={s} className="flex items-center gap-2">
                  <span aria-hidden className={`inline-block h-2.5 w-2.5 shrink-0 rounded-full ${st.dot}`} />
                  {st.label}
                  {s === "healthy" ? " — the only status that takes users" : ""}
                </li>
              );
            })}
          </ul>
          <p className="mb-3 text-slate-600">The same dot sits on each server and before each inbound in a route box; hover it for the reason.</p>

          <h3 className="mb-1 font-semibold text-slate-900">Boxes</h3>
          <ul className="mb-3 flex flex-col gap-1.5">
            <li className="flex items-center gap-2">
              <Swatch className="border-2 bg-white" style={{ borderColor: color }} />A route; its colour is its edges&apos; and its pipe&apos;s
            </li>
            <li className="flex items-center gap-2">
              <Swatch className="border-2 bg-red-100" style={{ borderColor: PANIC_COLOR }} />
              Route in panic: no inbound on an available server; users get any inbound of an enabled server
            </li>
            <li className="flex items-center gap-2">
              <Swatch className="border-2 border-dashed border-slate-400 bg-slate-50" />
              Empty route: a placeholder users do not see
            </li>
            <li className="flex items-center gap-2">
              <Swatch className="border-2 border-dashed border-amber-400 bg-amber-50" />
              Unassigned: inbounds in no route, which users cannot see
            </li>
            <li className="flex items-center gap-2">
              <span aria-hidden className="w-20 shrink-0 font-mono text-[10px] text-slate-500">
                VMess·ws·TLS
              </span>
              An inbound&apos;s protocol·transport·security (VLESS, VMess, Trojan or SS; tcp, ws, gRPC, HTTPUpgrade, XHTTP or h2; Reality, TLS or none when left out)
            </li>
          </ul>

          <h3 className="mb-1 font-semibold text-slate-900">Lines</h3>
          <ul className="mb-3 flex flex-col gap-1.5">
            <li className="flex items-center gap-2">
              <Line color={color} width={1.6} />
              An inbound in a route
            </li>
            <li className="flex items-center gap-2">
              <Line color={color} width={1.6} dash={DOWN_DASH} />
              An inbound whose server is not available
            </li>
            <li className="flex items-center gap-2">
              <Line color={color} width={3.5} dash="5" />
              The route&apos;s line in every subscription (it moves while there are few routes)
            </li>
            <li className="flex items-center gap-2">
              <Line color={PANIC_COLOR} width={3.5} dash="5" />
              The line of a route in panic
            </li>
            <li className="flex items-center gap-2">
              <Line color={PANIC_COLOR} width={2} dash={NO_LINE_DASH} />
              No line at all: every server of the route is disabled
            </li>
          </ul>

          <h3 className="mb-1 font-semibold text-slate-900">Numbers</h3>
          <p className="mb-1 text-slate-600">In a route box, each inbound shows the users the balancer assigned to it and the traffic it carries now.</p>
          <p className="mb-3 text-slate-600">
            Agents report traffic per server: &ldquo;≈&rdquo; marks a server&apos;s traffic split between its inbounds by their users.
          </p>

          <h3 className="mb-1 font-semibold text-slate-900">Zoom</h3>
          <p className="text-slate-600">Zoomed out, boxes show a summary in large type (name, status, count); zoom in to see and move inbounds.</p>
        </section>
      )}
    </div>
  );
}
