"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { z } from "zod";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass } from "@/components/ui/Field";
import { validate } from "@/components/ui/validate";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { nameSchema, portSchema, securitySchema, sniSchema } from "@/server/validation";

const formSchema = z
  .object({ name: nameSchema, port: portSchema, security: securitySchema, sni: sniSchema.nullable() })
  .refine((v) => v.security === "none" || v.sni !== null, { path: ["sni"], message: "Reality and TLS need a masquerade SNI" });

export interface InboundValues {
  id: string;
  name: string;
  port: number;
  security: "reality" | "tls" | "none";
  sni: string | null;
}

/** Create an inbound on a server, or edit one. */
export function InboundForm({ server, inbound, onClose, onCreated }: { server: { id: string; name: string }; inbound?: InboundValues; onClose: () => void; onCreated?: (defaultRoute: string | null) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [values, setValues] = useState({
    name: inbound?.name ?? "",
    port: inbound ? String(inbound.port) : "443",
    security: inbound?.security ?? ("reality" as InboundValues["security"]),
    sni: inbound?.sni ?? "",
  });
  const [clientErrors, setClientErrors] = useState<Record<string, string>>({});
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.servers.list.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.topology.get.queryKey() }),
    ]);
  const create = useMutation(
    trpc.inbounds.create.mutationOptions({
      onSuccess: async (r) => {
        await refresh();
        onCreated?.(r.defaultRoute?.name ?? null);
        onClose();
      },
    }),
  );
  const update = useMutation(
    trpc.inbounds.update.mutationOptions({
      onSuccess: async () => {
        await refresh();
        onClose();
      },
    }),
  );
  const mutation = inbound ? update : create;
  const { errors, general } = formErrors(mutation.error, clientErrors);
  const set = (k: keyof typeof values) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => {
    setValues((old) => ({ ...old, [k]: e.target.value }));
    if (errors[k]) setClientErrors((c) => ({ ...c, [k]: "" }));
  };

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    mutation.reset();
    const input = { ...values, sni: values.sni.trim() === "" ? null : values.sni };
    const found = validate(formSchema, input);
    setClientErrors(found);
    if (Object.keys(found).length > 0) return;
    const parsed = formSchema.parse(input);
    if (inbound) update.mutate({ inboundId: inbound.id, ...parsed });
    else create.mutate({ serverId: server.id, ...parsed });
  };
  const err = (k: string) => errors[k] || undefined;

  return (
    <Dialog title={inbound ? `Edit inbound ${inbound.name}` : `New inbound on ${server.name}`} onClose={onClose} description="VLESS over TCP. The name is what users see in their VPN app.">
      <form onSubmit={submit} noValidate className="grid gap-4 sm:grid-cols-2">
        <div className="sm:col-span-2">
          <Field label="Name" error={err("name")} hint="Include the flag, e.g. “🇺🇸 New York”.">
            {(p) => <input {...p} data-autofocus className={inputClass} value={values.name} onChange={set("name")} placeholder="🇺🇸 New York" />}
          </Field>
        </div>
        <Field label="Port" error={err("port")}>
          {(p) => <input {...p} className={inputClass} inputMode="numeric" value={values.port} onChange={set("port")} />}
        </Field>
        <Field label="Security" error={err("security")} hint={values.security === "reality" ? "Reality keys and short id are generated for you." : undefined}>
          {(p) => (
            <select {...p} className={inputClass} value={values.security} onChange={set("security")}>
              <option value="reality">Reality</option>
              <option value="tls">TLS</option>
              <option value="none">None</option>
            </select>
          )}
        </Field>
        <div className="sm:col-span-2">
          <Field label={values.security === "none" ? "Masquerade SNI (optional)" : "Masquerade SNI"} error={err("sni")} hint="The site this inbound looks like, e.g. www.microsoft.com.">
            {(p) => <input {...p} className={inputClass} value={values.sni} onChange={set("sni")} placeholder="www.microsoft.com" />}
          </Field>
        </div>
        <FormFooter wide error={general} pending={mutation.isPending} submitLabel={inbound ? "Save inbound" : "Create inbound"} onCancel={onClose} />
      </form>
    </Dialog>
  );
}
