"use client";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { z } from "zod";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass } from "@/components/ui/Field";
import { validate } from "@/components/ui/validate";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { useRefreshServers } from "./useRefreshServers";
import { addressSchema, capacitySchema, coefficientSchema, DEFAULT_REPORT_CAPACITY_MBPS, nameSchema, reportCapacitySchema, serverRoleSchema } from "@/core/validation";

const formSchema = z.object({ name: nameSchema, address: addressSchema, role: serverRoleSchema, coefficient: coefficientSchema, capacityMbps: capacitySchema, reportCapacityMbps: reportCapacitySchema });

export interface ServerValues {
  id: string;
  name: string;
  address: string;
  role: "master" | "node" | "both";
  coefficient: number;
  capacityMbps: number | null;
  reportCapacityMbps?: number;
  enabled: boolean;
}

/** Add or edit a server. Adding hands the new agent token to `onCreated`. */
export function ServerForm({
  clusterId,
  server,
  onClose,
  onCreated,
}: {
  clusterId: string;
  server?: ServerValues;
  onClose: () => void;
  onCreated?: (r: { name: string; agentToken: string }) => void;
}) {
  const trpc = useTRPC();
  const [values, setValues] = useState({
    name: server?.name ?? "",
    address: server?.address ?? "",
    role: server?.role ?? ("node" as ServerValues["role"]),
    coefficient: String(server?.coefficient ?? "1"),
    capacityMbps: server?.capacityMbps == null ? "" : String(server.capacityMbps),
    reportCapacityMbps: String(server?.reportCapacityMbps ?? DEFAULT_REPORT_CAPACITY_MBPS),
    enabled: server?.enabled ?? true,
  });
  const [clientErrors, setClientErrors] = useState<Record<string, string>>({});
  const refresh = useRefreshServers();
  const create = useMutation(
    trpc.servers.create.mutationOptions({
      onSuccess: async (r) => {
        await refresh();
        onCreated?.(r);
      },
    }),
  );
  const update = useMutation(
    trpc.servers.update.mutationOptions({
      onSuccess: async () => {
        await refresh();
        onClose();
      },
    }),
  );
  const mutation = server ? update : create;
  const { errors, general } = formErrors(mutation.error, clientErrors);
  const set = (k: keyof typeof values) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => {
    const v = e.target.type === "checkbox" ? (e.target as HTMLInputElement).checked : e.target.value;
    setValues((old) => ({ ...old, [k]: v }));
    if (errors[k]) setClientErrors((c) => ({ ...c, [k]: "" }));
  };

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    mutation.reset();
    const input = { ...values, capacityMbps: values.capacityMbps.trim() === "" ? null : values.capacityMbps };
    const found = validate(formSchema, input);
    setClientErrors(found);
    if (Object.keys(found).length > 0) return;
    const parsed = formSchema.parse(input);
    if (server) update.mutate({ serverId: server.id, ...parsed, enabled: values.enabled });
    else create.mutate({ clusterId, ...parsed, enabled: values.enabled });
  };

  const err = (k: string) => errors[k] || undefined;
  return (
    <Dialog title={server ? `Edit server ${server.name}` : "Add server"} onClose={onClose}>
      <form onSubmit={submit} noValidate className="grid gap-4 sm:grid-cols-2">
        <Field label="Name" error={err("name")}>
          {(p) => <input {...p} data-autofocus className={inputClass} value={values.name} onChange={set("name")} placeholder="us-nyc-1" />}
        </Field>
        <Field label="Public address" error={err("address")} hint="Hostname or IP address that clients connect to.">
          {(p) => <input {...p} className={inputClass} value={values.address} onChange={set("address")} placeholder="vpn1.example.com" />}
        </Field>
        <Field label="Role" error={err("role")}>
          {(p) => (
            <select {...p} className={inputClass} value={values.role} onChange={set("role")}>
              <option value="node">Node (serves users)</option>
              <option value="master">Master (stores users, hands out config)</option>
              <option value="both">Both</option>
            </select>
          )}
        </Field>
        <Field label="Coefficient" error={err("coefficient")} hint="Weight for round-robin, 0.1–100 (2.0 takes twice the users).">
          {(p) => <input {...p} className={inputClass} inputMode="decimal" value={values.coefficient} onChange={set("coefficient")} />}
        </Field>
        <Field label="Link capacity (Mbit/s, optional)" error={err("capacityMbps")} hint="Leave empty to learn it from traffic peaks. Until this link is seen full, its peak is only a lower bound and new users arriving together are split evenly across such servers.">
          {(p) => <input {...p} className={inputClass} inputMode="numeric" value={values.capacityMbps} onChange={set("capacityMbps")} placeholder="e.g. 1000" />}
        </Field>
        <Field
          label="Report capacity (Mbit/s)"
          error={err("reportCapacityMbps")}
          hint="The server's real link speed: an agent report claiming more traffic for one user than this moves between two reports is refused. Default 10,000 (10 Gbit/s)."
        >
          {(p) => <input {...p} className={inputClass} inputMode="numeric" value={values.reportCapacityMbps} onChange={set("reportCapacityMbps")} />}
        </Field>
        <label className="flex items-center gap-2 self-end pb-2 text-sm font-medium text-slate-700">
          <input type="checkbox" className="h-4 w-4 accent-sky-600" checked={values.enabled} onChange={set("enabled")} /> Enabled (in rotation)
        </label>
        <FormFooter wide error={general} pending={mutation.isPending} submitLabel={server ? "Save server" : "Add server"} onCancel={onClose} />
      </form>
    </Dialog>
  );
}
