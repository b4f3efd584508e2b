"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { useEffect, useRef } from "react";
import { useTRPC } from "@/lib/trpc";
import { httpStatus } from "@/lib/errors";
import { useClusterChanges } from "@/components/live/useClusterChanges";
import { useCanEdit } from "@/components/AppShell";
import { DeleteDemoButton, DemoBadge } from "@/components/DemoCluster";

const TABS = [
  { href: "", label: "Diagram" },
  { href: "/servers", label: "Servers & inbounds" },
  { href: "/subscribers", label: "Subscribers" },
  { href: "/health", label: "Health" },
  { href: "/branding", label: "Subscriber page" },
  { href: "/audit", label: "Audit log" },
];

/**
 * Tabs of one cluster's pages, rendered once by the cluster layout. Its height is the CSS
 * variable --cluster-tabs-h, which full-height pages (the diagram) subtract.
 */
export function ClusterNav({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const cluster = useQuery(trpc.clusters.get.queryOptions({ clusterId }));
  const canEdit = useCanEdit();
  const pathname = usePathname();
  const router = useRouter();
  // Deleted here or in another browser: the cluster's pages go with it, back to the list.
  useClusterChanges(clusterId, ["topology"], [trpc.clusters.get.queryKey({ clusterId })]);
  const gone = httpStatus(cluster.error) === 404;
  useEffect(() => {
    if (gone) router.replace("/clusters");
  }, [gone, router]);
  const base = `/clusters/${clusterId}`;
  const navRef = useRef<HTMLElement>(null);
  // On a narrow screen the tabs scroll sideways: keep the current one in sight.
  useEffect(() => {
    navRef.current?.querySelector<HTMLElement>("[aria-current=page]")?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }, [pathname, cluster.data?.name]);
  return (
    <div className="flex h-[var(--cluster-tabs-h)] items-end gap-3 border-b border-slate-200 bg-white px-4 sm:gap-6 sm:px-5">
      <div className="flex max-w-[35%] shrink-0 items-center gap-2 self-center sm:max-w-sm">
        <span className="truncate font-semibold text-slate-800" title={cluster.data?.name}>
          {cluster.data?.name ?? "…"}
        </span>
        {cluster.data?.demo && <DemoBadge />}
        {cluster.data?.demo && canEdit && <DeleteDemoButton cluster={cluster.data} className="max-sm:hidden" />}
      </div>
      <nav
        ref={navRef}
        aria-label="Cluster pages"
        className="flex min-w-0 flex-1 gap-1 overflow-x-auto whitespace-nowrap text-sm [scrollbar-width:none]"
      >
        {TABS.map((t) => {
          const href = base + t.href;
          const active = pathname === href;
          return (
            <Link
              key={t.href}
              href={href}
              aria-current={active ? "page" : undefined}
              className={`shrink-0 border-b-2 px-3 py-2.5 ${active ? "border-sky-600 font-medium text-sky-700" : "border-transparent text-slate-600 hover:text-slate-900"}`}
            >
              {t.label}
            </Link>
          );
        })}
      </nav>
    </div>
  );
}
