"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass } from "@/components/ui/Field";
import { validate } from "@/components/ui/validate";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { useRefreshServers } from "./useRefreshServers";
import { inboundFieldsSchema, splitList } from "@/core/validation";
import { routeFlagPrefix } from "@/core/format";
import { FlagPicker } from "@/components/routes/FlagPicker";
import { leadingFlagCode, nameWithFlag } from "./inbound-name";
import { randomHex } from "@/lib/random-hex";
import { DEFAULT_SS_METHOD, INBOUND_DEFAULTS, PROTOCOL_LABELS, SS_METHODS, TRANSPORT_LABELS, TRANSPORTS, usesPath, coreNeeded, type InboundProtocol, type InboundSecurity, type InboundSettings, type InboundTransport } from "@/core/inbound-protocols";

const formSchema = inboundFieldsSchema;

export interface InboundValues extends InboundSettings {
  id: string;
  name: string;
  port: number;
}

/** A fresh Reality short id: 8 random bytes as 16 hex digits (what Xray's docs suggest). */
function newShortId(): string {
  return randomHex(8);
}

/** Create an inbound on a server, or edit one. */
export function InboundForm({
  server,
  clusterId,
  inbound,
  onClose,
  onCreated,
}: {
  server: { id: string; name: string };
  /** Given on create: the form offers the cluster's routes to put the new inbound in. */
  clusterId?: string;
  inbound?: InboundValues;
  onClose: () => void;
  onCreated?: (defaultRoute: string | null, chosenRoute: string | null) => void;
}) {
  const trpc = useTRPC();
  const topology = useQuery({ ...trpc.topology.get.queryOptions({ clusterId: clusterId ?? "" }), enabled: !inbound && !!clusterId });
  const routeOptions = topology.data?.routes ?? [];
  const [routeId, setRouteId] = useState("");
  const [pickingFlag, setPickingFlag] = useState(false);
  const [values, setValues] = useState({
    name: inbound?.name ?? "",
    port: inbound ? String(inbound.port) : "443",
    protocol: inbound?.protocol ?? (INBOUND_DEFAULTS.protocol as InboundProtocol),
    transport: inbound?.transport ?? (INBOUND_DEFAULTS.transport as InboundTransport),
    path: inbound?.path ?? "",
    host: inbound?.host ?? "",
    serviceName: inbound?.serviceName ?? "",
    ssMethod: inbound?.ssMethod ?? DEFAULT_SS_METHOD,
    security: inbound?.security ?? (INBOUND_DEFAULTS.security as InboundSecurity),
    sni: inbound?.sni ?? "",
    realityDest: inbound?.realityDest ?? "",
    realityServerNames: (inbound?.realityServerNames ?? []).join(", "),
    realityShortIds: inbound?.realityShortIds?.length ? inbound.realityShortIds.join(", ") : inbound ? "" : newShortId(),
    tlsCertificateFile: inbound?.tlsCertificateFile ?? "",
    tlsKeyFile: inbound?.tlsKeyFile ?? "",
  });
  const [clientErrors, setClientErrors] = useState<Record<string, string>>({});
  const refresh = useRefreshServers();
  const create = useMutation(
    trpc.inbounds.create.mutationOptions({
      onSuccess: async (r) => {
        await refresh();
        const chosen = routeOptions.find((x) => x.id === r.inbound.routeId && x.id !== r.defaultRoute?.id);
        onCreated?.(r.defaultRoute?.name ?? null, chosen ? `${routeFlagPrefix(chosen.name, chosen.flag)} ${chosen.name}`.trim() : null);
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
  // Which core this combination needs (the agent reports it not served on v2ray 4.34).
  const needsCore = coreNeeded(values);
  const { errors, general } = formErrors(mutation.error, clientErrors);
  const set = (k: keyof typeof values) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => {
    const value = e.target.value;
    setValues((old) => {
      const next = { ...old, [k]: value };
      // A transport that needs a path starts with one named after it; gRPC with a service name.
      if (k === "transport" && usesPath(value as InboundTransport) && old.path.trim() === "") next.path = `/${value}`;
      if (k === "transport" && value === "grpc" && old.serviceName.trim() === "") next.serviceName = "grpc";
      // Shadowsocks runs bare; Trojan and h2 need TLS or Reality: start from a security that fits.
      if (k === "protocol" && value === "shadowsocks") Object.assign(next, { security: "none", transport: "tcp" });
      if (k === "protocol" && value === "vmess" && old.security === "reality") next.security = "tls";
      // No TLS, no SNI: the field goes, and its value with it.
      if (next.security === "none") next.sni = "";
      return next;
    });
    // Editing a field hides its messages (the server's too, for list items such as "realityShortIds.1").
    setClientErrors((c) => {
      const next = { ...c, [k]: "" };
      for (const key of Object.keys(errors)) if (key.startsWith(`${k}.`)) next[key] = "";
      return next;
    });
  };

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    mutation.reset();
    const orNull = (v: string) => (v.trim() === "" ? null : v);
    const reality = values.security === "reality";
    const tls = values.security === "tls";
    const pathLike = usesPath(values.transport);
    const input = {
      name: values.name,
      port: values.port,
      protocol: values.protocol,
      transport: values.transport,
      // Fields of another transport or protocol are not sent: switching clears them.
      path: pathLike ? orNull(values.path) : null,
      host: pathLike ? orNull(values.host) : null,
      serviceName: values.transport === "grpc" ? orNull(values.serviceName) : null,
      ssMethod: values.protocol === "shadowsocks" ? values.ssMethod : null,
      security: values.security,
      sni: values.security === "none" ? null : orNull(values.sni),
      // Fields of another security are not sent: switching security clears them.
      realityDest: reality ? orNull(values.realityDest) : null,
      realityServerNames: reality ? splitList(values.realityServerNames) : [],
      ...(reality && values.realityShortIds.trim() !== "" ? { realityShortIds: splitList(values.realityShortIds) } : {}),
      tlsCertificateFile: tls ? orNull(values.tlsCertificateFile) : null,
      tlsKeyFile: tls ? orNull(values.tlsKeyFile) : null,
    };
    const found = validate(formSchema, input);
    setClientErrors(found);
    if (Object.keys(found).length > 0) return;
    const parsed = formSchema.parse(input);
    if (inbound) update.mutate({ inboundId: inbound.id, ...parsed });
    else create.mutate({ serverId: server.id, ...(routeId ? { routeId } : {}), ...parsed });
  };
  // Errors of list items ("realityShortIds.1") show on the list's field.
  const err = (k: string) => errors[k] || Object.entries(errors).find(([key, v]) => key.startsWith(`${k}.`) && v)?.[1] || undefined;

  return (
    <Dialog title={inbound ? `Edit inbound ${inbound.name}` : `New inbound on ${server.name}`} onClose={onClose} description="The protocol and transport your users' apps connect with. The name is what users see in their VPN app.">
      <form onSubmit={submit} noValidate className="grid gap-4 sm:grid-cols-2">
        <div className="sm:col-span-2">
          <Field label="Name" error={err("name")} hint="What users see in their app; pick its flag below.">
            {(p) => <input {...p} data-autofocus className={inputClass} value={values.name} onChange={set("name")} placeholder="New York" />}
          </Field>
        </div>
        <div className="sm:col-span-2">
          {/* The country list opens on demand: 250 radios would crowd the form. */}
          {pickingFlag ? (
            <FlagPicker value={leadingFlagCode(values.name)} onChange={(code) => setValues((old) => ({ ...old, name: nameWithFlag(old.name, code) }))} />
          ) : (
            <button type="button" className="text-sm font-medium text-sky-700 hover:underline" onClick={() => setPickingFlag(true)}>
              {leadingFlagCode(values.name) ? "Change the flag…" : "Choose a flag…"}
            </button>
          )}
        </div>
        {!inbound && clusterId && (
          <div className="sm:col-span-2">
            <Field label="Route" error={err("routeId")} hint="Optional: put the new inbound straight into a route, or leave it unassigned.">
              {(p) => (
                <select {...p} className={inputClass} value={routeId} onChange={(e) => setRouteId(e.target.value)}>
                  <option value="">Unassigned</option>
                  {routeOptions.map((r) => (
                    <option key={r.id} value={r.id}>
                      {`${routeFlagPrefix(r.name, r.flag)} ${r.name}`.trim()}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          </div>
        )}
        <Field label="Port" error={err("port")}>
          {(p) => <input {...p} className={inputClass} inputMode="numeric" value={values.port} onChange={set("port")} />}
        </Field>
        <Field label="Protocol" error={err("protocol")} hint={values.protocol === "shadowsocks" ? "Each subscriber gets their own key." : undefined}>
          {(p) => (
            <select {...p} className={inputClass} value={values.protocol} onChange={set("protocol")}>
              {(Object.keys(PROTOCOL_LABELS) as InboundProtocol[]).map((k) => (
                <option key={k} value={k}>
                  {k === "shadowsocks" ? "Shadowsocks" : PROTOCOL_LABELS[k]}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Network" error={err("transport")} hint="The transport the connection rides on (Xray calls it network).">
          {(p) => (
            <select {...p} className={inputClass} value={values.transport} onChange={set("transport")}>
              {TRANSPORTS.map((k) => (
                <option key={k} value={k}>
                  {TRANSPORT_LABELS[k]}
                </option>
              ))}
            </select>
          )}
        </Field>
        {values.protocol === "shadowsocks" && (
          <Field label="Cipher" error={err("ssMethod")} hint="The 2022 ciphers are the ones to choose today.">
            {(p) => (
              <select {...p} className={inputClass} value={values.ssMethod} onChange={set("ssMethod")}>
                {SS_METHODS.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            )}
          </Field>
        )}
        {usesPath(values.transport) && (
          <>
            <Field label="Path" error={err("path")} hint="The HTTP path clients ask for, e.g. /ws.">
              {(p) => <input {...p} className={`${inputClass} font-mono`} value={values.path} onChange={set("path")} placeholder={`/${values.transport}`} />}
            </Field>
            <Field label="Host header (optional)" error={err("host")} hint="A CDN's front name, when clients go through one.">
              {(p) => <input {...p} className={inputClass} value={values.host} onChange={set("host")} placeholder="cdn.example.com" />}
            </Field>
          </>
        )}
        {values.transport === "grpc" && (
          <Field label="Service name" error={err("serviceName")} hint="gRPC's service name, e.g. grpc.">
            {(p) => <input {...p} className={`${inputClass} font-mono`} value={values.serviceName} onChange={set("serviceName")} placeholder="grpc" />}
          </Field>
        )}
        <Field label="Security" error={err("security")} hint={values.security === "reality" ? "The Reality key pair is generated for you." : undefined}>
          {(p) => (
            <select {...p} className={inputClass} value={values.security} onChange={set("security")}>
              <option value="reality">Reality</option>
              <option value="tls">TLS</option>
              <option value="none">None</option>
            </select>
          )}
        </Field>
        {values.security === "tls" && (
          <div className="sm:col-span-2">
            <Field
              label="Server name (SNI)"
              error={err("sni")}
              hint="Your certificate’s domain, e.g. vpn.example.com: clients ask for it and check the certificate against it."
            >
              {(p) => <input {...p} className={inputClass} value={values.sni} onChange={set("sni")} placeholder="vpn.example.com" />}
            </Field>
          </div>
        )}
        {values.security === "reality" && (
          <div className="sm:col-span-2">
            <Field
              label="Masquerade SNI"
              error={err("sni")}
              hint="Another site this inbound passes for, e.g. www.microsoft.com (not your domain): clients send it, and Reality borrows that site’s certificate."
            >
              {(p) => <input {...p} className={inputClass} value={values.sni} onChange={set("sni")} placeholder="www.microsoft.com" />}
            </Field>
          </div>
        )}
        {values.security === "reality" && (
          <>
            <Field label="Dest" error={err("realityDest")} hint="Where the core forwards probes and non-clients, host:port. Empty: the SNI on port 443.">
              {(p) => <input {...p} className={inputClass} value={values.realityDest} onChange={set("realityDest")} placeholder={`${values.sni.trim() || "www.microsoft.com"}:443`} />}
            </Field>
            <Field
              label="Accepted SNIs"
              error={err("realityServerNames")}
              hint="Reality’s serverNames: the SNI values from clients the core accepts (names the dest site serves), comma-separated. Empty: the masquerade SNI."
            >
              {(p) => <input {...p} className={inputClass} value={values.realityServerNames} onChange={set("realityServerNames")} placeholder={values.sni.trim() || "www.microsoft.com"} />}
            </Field>
            <div className="sm:col-span-2">
              <Field label="Short ids" error={err("realityShortIds")} hint="Hex, up to 16 digits each, comma-separated; share links use the first. One was generated for you.">
                {(p) => <input {...p} className={`${inputClass} font-mono`} value={values.realityShortIds} onChange={set("realityShortIds")} placeholder="0123456789abcdef" />}
              </Field>
            </div>
          </>
        )}
        {values.security === "tls" && (
          <>
            <div className="sm:col-span-2">
              <Field label="Certificate file" error={err("tlsCertificateFile")} hint="Absolute path on the server, e.g. /etc/letsencrypt/live/vpn.example.com/fullchain.pem.">
                {(p) => <input {...p} className={`${inputClass} font-mono`} value={values.tlsCertificateFile} onChange={set("tlsCertificateFile")} placeholder="/etc/ssl/certs/vpn.example.com.pem" />}
              </Field>
            </div>
            <div className="sm:col-span-2">
              <Field label="Key file" error={err("tlsKeyFile")} hint="Absolute path on the server; the key never leaves it.">
                {(p) => <input {...p} className={`${inputClass} font-mono`} value={values.tlsKeyFile} onChange={set("tlsKeyFile")} placeholder="/etc/ssl/private/vpn.example.com.key" />}
              </Field>
            </div>
          </>
        )}
        {needsCore && (
          <p className="text-sm text-slate-600 sm:col-span-2" data-testid="needs-xray">
            {needsCore}. A server whose agent runs the other core reports it not served.
          </p>
        )}
        <FormFooter wide error={general} pending={mutation.isPending} submitLabel={inbound ? "Save inbound" : "Create inbound"} onCancel={onClose} />
      </form>
    </Dialog>
  );
}
