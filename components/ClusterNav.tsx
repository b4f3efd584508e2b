"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";

const TABS = [
  { href: "", label: "Diagram" },
  { href: "/servers", label: "Servers & inbounds" },
  { href: "/subscribers", label: "Subscribers" },
  { href: "/health", label: "Health" },
  { href: "/audit", label: "Audit log" },
];

/** Tabs of one cluster's pages. */
export function ClusterNav({ clusterId, clusterName }: { clusterId: string; clusterName?: string }) {
  const pathname = usePathname();
  const base = `/clusters/${clusterId}`;
  return (
    <div className="flex items-center gap-6 border-b border-slate-200 bg-white px-5">
      <div className="py-2 font-semibold text-slate-800">{clusterName ?? "…"}</div>
      <nav aria-label="Cluster pages" className="flex gap-1 text-sm">
        {TABS.map((t) => {
          const href = base + t.href;
          const active = pathname === href;
          return (
            <Link
              key={t.href}
              href={href}
              aria-current={active ? "page" : undefined}
              className={`border-b-2 px-3 py-2.5 ${active ? "border-sky-600 font-medium text-sky-700" : "border-transparent text-slate-600 hover:text-slate-900"}`}
            >
              {t.label}
            </Link>
          );
        })}
      </nav>
    </div>
  );
}
