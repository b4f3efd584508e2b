"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useId, useRef, useState } from "react";
import { ExplainPanel } from "@/components/balancer/ExplainPanel";
import { useCanEdit } from "@/components/AppShell";
import { useClusterChanges } from "@/components/live/useClusterChanges";
import { PageSkeleton } from "@/components/ui/Skeleton";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { DevicesPanel } from "./DevicesPanel";
import { formatBytes } from "./format";
import { LinkPanel } from "./LinkDialog";
import { expiryText, statusBadge } from "./list-view";
import { SubscriberForm } from "./SubscriberForm";
import { UsageByServer } from "./UsageByServer";
import { UsageHistory } from "./UsageHistory";
import { UsagePeriods } from "./UsagePeriods";
import { SUBSCRIBER_TABS, type SubscriberTab } from "./subscriber-tabs";

/**
 * One subscriber's page (issue 25, point 6): usage history, links and QR, devices, edit, and
 * the balancer's explanation, one tab each. The tab is in the address (?tab=), so a link or a
 * reload opens the same one.
 */
export function SubscriberDetail({ clusterId, subscriberId, tab: initialTab }: { clusterId: string; subscriberId: string; tab: SubscriberTab }) {
  const trpc = useTRPC();
  const canEdit = useCanEdit();
  const [tab, setTab] = useState(initialTab);
  const baseId = useId();
  const tabRefs = useRef<Array<HTMLButtonElement | null>>([]);
  useClusterChanges(clusterId, ["subscribers", "traffic"], [trpc.subscribers.pathKey()]);
  const sub = useQuery(trpc.subscribers.get.queryOptions({ subscriberId }, { refetchInterval: 10_000 }));
  // The address follows the tab (a reload or a shared link opens it) without a round trip: Next
  // keeps native history.replaceState in step with its router.
  const select = (next: SubscriberTab) => {
    setTab(next);
    window.history.replaceState(null, "", `?tab=${next}`);
  };
  // Arrow keys move between tabs, as the WAI-ARIA tabs pattern has it.
  const onKeyDown = (e: React.KeyboardEvent, index: number) => {
    const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
    if (!step) return;
    e.preventDefault();
    const next = (index + step + SUBSCRIBER_TABS.length) % SUBSCRIBER_TABS.length;
    tabRefs.current[next]?.focus();
    select(SUBSCRIBER_TABS[next]!.id);
  };
  const s = sub.data;
  const panelId = `${baseId}-panel`;
  return (
    <main className="mx-auto max-w-5xl p-4 sm:p-6">
      <Link href={`/clusters/${clusterId}/subscribers`} className="text-sm text-sky-700 hover:underline">
        ← Subscribers
      </Link>
      {sub.error && (
        <p role="alert" className="mt-4 text-red-700">
          {errorMessage(sub.error)}
        </p>
      )}
      {sub.isLoading && <PageSkeleton className="mt-4" label="Loading the subscriber" rows={3} />}
      {s && (
        <>
          <div className="mt-2 flex flex-wrap items-center gap-3">
            <h1 className="text-2xl font-semibold break-all">{s.name}</h1>
            <span className={`rounded-full px-2 py-0.5 text-xs font-medium ${statusBadge(s).className}`} data-testid="subscriber-status">
              {statusBadge(s).label}
            </span>
          </div>
          <dl className="mt-2 flex flex-wrap gap-x-6 gap-y-1 text-sm text-slate-600">
            <div className="flex gap-1">
              <dt className="text-slate-500">Used</dt>
              <dd data-testid="subscriber-used">
                {formatBytes(s.trafficUsedBytes)} / {s.trafficLimitBytes ? formatBytes(s.trafficLimitBytes) : "unlimited"}
              </dd>
            </div>
            <div className="flex gap-1">
              <dt className="text-slate-500">Expires</dt>
              <dd>{expiryText(s)}</dd>
            </div>
            <div className="flex gap-1">
              <dt className="text-slate-500">Devices</dt>
              <dd data-testid="subscriber-device-limit">{s.deviceLimit === null ? "no limit" : `at most ${s.deviceLimit}`}</dd>
            </div>
            {s.note && (
              <div className="flex gap-1">
                <dt className="text-slate-500">Note</dt>
                <dd data-testid="subscriber-note" className="whitespace-pre-line">
                  {s.note}
                </dd>
              </div>
            )}
          </dl>

          <div role="tablist" aria-label="Subscriber pages" className="mt-5 flex gap-1 overflow-x-auto border-b border-slate-200">
            {SUBSCRIBER_TABS.map((t, i) => (
              <button
                key={t.id}
                ref={(el) => {
                  tabRefs.current[i] = el;
                }}
                type="button"
                role="tab"
                id={`${baseId}-${t.id}`}
                aria-selected={t.id === tab}
                aria-controls={panelId}
                tabIndex={t.id === tab ? 0 : -1}
                onClick={() => select(t.id)}
                onKeyDown={(e) => onKeyDown(e, i)}
                className={`-mb-px shrink-0 whitespace-nowrap border-b-2 px-3 py-2 text-sm font-medium ${
                  t.id === tab ? "border-sky-600 text-sky-800" : "border-transparent text-slate-600 hover:text-slate-900"
                }`}
              >
                {t.label}
              </button>
            ))}
          </div>
          <div role="tabpanel" id={panelId} aria-labelledby={`${baseId}-${tab}`} className="pt-5">
            {tab === "usage" && (
              <>
                <UsageHistory subscriberId={subscriberId} />
                <UsageByServer subscriberId={subscriberId} />
                <div className="mt-8">
                  <UsagePeriods subscriberId={subscriberId} />
                </div>
              </>
            )}
            {tab === "links" &&
              (s.token ? (
                <div className="max-w-xl">
                  <LinkPanel name={s.name} token={s.token} clusterId={clusterId} />
                </div>
              ) : (
                <p className="text-sm text-slate-600">Only admins and the owner see subscription links.</p>
              ))}
            {tab === "devices" && <DevicesPanel clusterId={clusterId} subscriberId={subscriberId} name={s.name} canEdit={canEdit} />}
            {tab === "edit" &&
              (canEdit ? (
                // The form starts from the stored values and keeps what is typed while the row refetches.
                <SubscriberForm key={s.id} clusterId={clusterId} subscriber={s} inline onClose={() => select("usage")} />
              ) : (
                <p className="text-sm text-slate-600">Viewers cannot change subscribers: ask an admin.</p>
              ))}
            {tab === "explain" && <ExplainPanel subscriberId={subscriberId} />}
          </div>
        </>
      )}
    </main>
  );
}
