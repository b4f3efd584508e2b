"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { inputClass } from "@/components/ui/Field";
import type { DevicelessFetches } from "@/core/devices";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { lastSeenText } from "./list-view";
import { smallDangerButton } from "@/components/ui/buttons";

interface Device {
  id: string;
  hwid: string;
  label: string;
  firstSeenAt: Date;
  lastSeenAt: Date;
  overLimit: boolean;
}

const when = (d: Date) => d.toISOString().replace("T", " ").slice(0, 16) + " UTC";

/**
 * A subscriber's devices (issue 27, point 3): every app that fetched the subscription with a
 * device id, first and last seen, each removable; and the cluster's rule for apps that send none.
 */
export function DevicesPanel({ clusterId, subscriberId, name, canEdit }: { clusterId: string; subscriberId: string; name: string; canEdit: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.subscribers.devices.queryOptions({ subscriberId }, { refetchInterval: 10_000 }));
  const [removing, setRemoving] = useState<Device | null>(null);
  const remove = useMutation(
    trpc.subscribers.removeDevice.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.subscribers.pathKey() });
        setRemoving(null);
      },
    }),
  );
  const data = list.data;
  const nowMs = list.dataUpdatedAt || Date.now();
  return (
    <section aria-labelledby="devices">
      <h2 id="devices" className="text-lg font-semibold">
        Devices
      </h2>
      <p className="mt-1 text-sm text-slate-600">
        Apps that send a device id (Happ, v2rayTun, FlClashX and others send <code>x-hwid</code>) are listed here at their first fetch.{" "}
        {data &&
          (data.deviceLimit === null
            ? "No device limit: every device gets the servers."
            : `At most ${data.deviceLimit} device${data.deviceLimit === 1 ? "" : "s"}: a new one past the limit gets one entry saying so instead of the servers. Removing a device frees its place.`)}
      </p>
      {list.error && (
        <p role="alert" className="mt-2 text-sm text-red-700">
          {errorMessage(list.error)}
        </p>
      )}
      {data && data.devices.length === 0 && <p className="mt-3 text-sm text-slate-600">No device has fetched the subscription with a device id yet.</p>}
      {data && data.devices.length > 0 && (
        <table className="table-cards mt-3 w-full text-sm" aria-label={`Devices of ${name}`}>
          <thead className="text-left text-xs uppercase tracking-wide text-slate-500">
            <tr>
              <th className="py-1.5 pr-3 font-medium">Device</th>
              <th className="py-1.5 pr-3 font-medium">Device id</th>
              <th className="py-1.5 pr-3 font-medium">First seen</th>
              <th className="py-1.5 pr-3 font-medium">Last seen</th>
              {canEdit && <th className="py-1.5 font-medium">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {data.devices.map((d) => (
              <tr key={d.id} data-testid="device-row" aria-label={`Device ${d.label}`} className="border-t border-slate-100">
                <td className="py-1.5 pr-3 font-medium">
                  {d.label}
                  {d.overLimit && <span className="ml-2 rounded bg-red-50 px-1.5 py-0.5 text-xs font-medium text-red-800">over the limit</span>}
                </td>
                <td data-label="Device id" className="max-w-[14rem] truncate py-1.5 pr-3 font-mono text-xs text-slate-600" title={d.hwid} data-testid="device-hwid">
                  {d.hwid}
                </td>
                <td data-label="First seen" className="py-1.5 pr-3 text-slate-600" data-testid="device-first-seen">
                  {when(d.firstSeenAt)}
                </td>
                <td data-label="Last seen" className="py-1.5 pr-3 text-slate-600" title={when(d.lastSeenAt)} data-testid="device-last-seen">
                  {lastSeenText(d.lastSeenAt, nowMs)}
                </td>
                {canEdit && (
                  <td className="py-1.5">
                    <button type="button" className={smallDangerButton} aria-label={`Remove device ${d.label}`} onClick={() => setRemoving(d)}>
                      Remove
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <DevicelessSetting clusterId={clusterId} canEdit={canEdit} />
      {removing && (
        <ConfirmDialog
          title={`Remove device ${removing.label}?`}
          confirmLabel="Remove device"
          pending={remove.isPending}
          error={remove.error ? errorMessage(remove.error) : null}
          onClose={() => {
            remove.reset();
            setRemoving(null);
          }}
          onConfirm={() => remove.mutate({ subscriberId, deviceId: removing.id })}
        >
          <p>Its place under the device limit is free again. If the app fetches the subscription again, it is counted as a new device.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** The cluster's rule for fetches without a device id: only subscribers with a device limit are concerned. */
function DevicelessSetting({ clusterId, canEdit }: { clusterId: string; canEdit: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const cluster = useQuery(trpc.clusters.get.queryOptions({ clusterId }));
  const [saved, setSaved] = useState(false);
  const save = useMutation(
    trpc.clusters.setDevicelessFetches.mutationOptions({
      onSuccess: async () => {
        setSaved(true);
        await queryClient.invalidateQueries({ queryKey: trpc.clusters.get.queryKey({ clusterId }) });
      },
    }),
  );
  const value = cluster.data?.devicelessFetches;
  return (
    <div className="mt-6 rounded-lg border border-slate-200 bg-white p-4">
      <label htmlFor="deviceless-fetches" className="text-sm font-medium text-slate-800">
        Apps that send no device id (whole cluster)
      </label>
      <p className="mt-1 text-sm text-slate-600">
        For subscribers with a device limit. Refusing closes the limit&apos;s gap (an app that sends no id cannot be counted) but cuts off apps that never send one. Subscribers without a limit are
        never refused.
      </p>
      <div className="mt-2 flex flex-wrap items-center gap-3">
        <select
          id="deviceless-fetches"
          className={`${inputClass} w-auto`}
          value={value ?? "allow"}
          disabled={!canEdit || !value || save.isPending}
          onChange={(e) => {
            setSaved(false);
            save.mutate({ clusterId, devicelessFetches: e.target.value as DevicelessFetches });
          }}
        >
          <option value="allow">Allow: they get the servers</option>
          <option value="refuse">Refuse: they get one entry saying why</option>
        </select>
        {saved && !save.isPending && (
          <span role="status" className="text-sm text-green-700">
            Saved
          </span>
        )}
        {save.error && (
          <span role="alert" className="text-sm text-red-700">
            {errorMessage(save.error)}
          </span>
        )}
      </div>
    </div>
  );
}
