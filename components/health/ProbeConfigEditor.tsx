"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { errorMessage, fieldErrors } from "@/lib/errors";
import { Field, buttonClass, inputClass } from "@/components/ui/Field";
import {
  MAX_BODY_CONTAINS,
  PROBE_METHODS,
  PROBE_PROTOCOLS,
  RECOMMENDED_MIN_PROBE_INTERVAL_S,
  probeConfigSchema,
  type ProbeConfig,
} from "@/core/monitoring-contract";
import { headerLines, parseHeaderLines } from "./header-lines";

/** The form's text state; converted to a ProbeConfig candidate on every change. */
interface Form {
  enabled: boolean;
  protocol: string;
  port: string;
  method: string;
  path: string;
  hostHeader: string;
  headers: string;
  payload: string;
  intervalS: string;
  timeoutS: string;
  unhealthyThreshold: string;
  healthyThreshold: string;
  statusCodes: string;
  headerMatch: string;
  bodyContains: string;
}

function toForm(c: ProbeConfig): Form {
  return {
    enabled: c.enabled,
    protocol: c.protocol,
    port: c.port === undefined ? "" : String(c.port),
    method: c.method,
    path: c.path,
    hostHeader: c.hostHeader ?? "",
    headers: headerLines(c.headers),
    payload: c.payload ?? "",
    intervalS: String(c.intervalS),
    timeoutS: String(c.timeoutS),
    unhealthyThreshold: String(c.unhealthyThreshold),
    healthyThreshold: String(c.healthyThreshold),
    statusCodes: c.statusCodes,
    headerMatch: headerLines(c.headerMatch),
    bodyContains: c.bodyContains ?? "",
  };
}

const num = (s: string): number | string => (s.trim() === "" || Number.isNaN(Number(s)) ? s : Number(s));

/** Validates the form with the server's own schema; errors by field. */
export function validateProbeForm(f: Form): { config?: ProbeConfig; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const headers = parseHeaderLines(f.headers);
  const headerMatch = parseHeaderLines(f.headerMatch);
  if (!headers.ok) errors.headers = headers.error;
  if (!headerMatch.ok) errors.headerMatch = headerMatch.error;
  const candidate: Record<string, unknown> = {
    enabled: f.enabled,
    protocol: f.protocol,
    method: f.method,
    path: f.path,
    headers: headers.ok ? headers.value : {},
    intervalS: num(f.intervalS),
    timeoutS: num(f.timeoutS),
    unhealthyThreshold: num(f.unhealthyThreshold),
    healthyThreshold: num(f.healthyThreshold),
    statusCodes: f.statusCodes,
  };
  if (f.port.trim() !== "") candidate.port = num(f.port);
  if (f.hostHeader !== "") candidate.hostHeader = f.hostHeader;
  if (f.payload !== "") candidate.payload = f.payload;
  if (headerMatch.ok && Object.keys(headerMatch.value).length > 0) candidate.headerMatch = headerMatch.value;
  if (f.bodyContains !== "") candidate.bodyContains = f.bodyContains;
  const parsed = probeConfigSchema.safeParse(candidate);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = String(issue.path[0] ?? "form");
      if (!errors[key]) {
        const sub = issue.path.length > 1 ? `${String(issue.path[1])}: ` : "";
        // Every probe field's schema words its own message naming the field (monitoring-contract).
        errors[key] = `${sub}${issue.message}`;
      }
    }
  }
  return { config: parsed.success && Object.keys(errors).length === 0 ? parsed.data : undefined, errors };
}

export function ProbeConfigEditor({ clusterId, config }: { clusterId: string; config: ProbeConfig }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [form, setForm] = useState<Form>(() => toForm(config));
  const [dirty, setDirty] = useState(false);
  const [serverErrors, setServerErrors] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (!dirty) setForm(toForm(config));
  }, [config, dirty]);
  const { config: valid, errors } = useMemo(() => validateProbeForm(form), [form]);
  const save = useMutation(
    trpc.monitoring.setProbeConfig.mutationOptions({
      onSuccess: async () => {
        setDirty(false);
        setSaved(true);
        setServerErrors({});
        await queryClient.invalidateQueries({ queryKey: trpc.monitoring.health.queryKey({ clusterId }) });
      },
      onError: (err) => {
        const f = fieldErrors(err);
        setServerErrors(Object.fromEntries(Object.entries(f).map(([k, v]) => [k.replace(/^config\./, "").split(".")[0]!, v])));
      },
    }),
  );
  const set = <K extends keyof Form>(k: K, v: Form[K]) => {
    setForm((f) => ({ ...f, [k]: v }));
    setDirty(true);
    setSaved(false);
  };
  const err = (k: string) => errors[k] ?? serverErrors[k];
  const http = form.protocol !== "tcp";
  const text = (k: keyof Form, label: string, hint?: string, type = "text") => (
    <Field label={label} error={err(k)} hint={hint}>
      {(p) => <input {...p} type={type} className={inputClass} value={form[k] as string} onChange={(e) => set(k, e.target.value as never)} />}
    </Field>
  );
  return (
    <form
      aria-label="Probe configuration"
      className="flex flex-col gap-4 rounded-lg border border-slate-200 bg-white p-4"
      onSubmit={(e) => {
        e.preventDefault();
        if (valid) save.mutate({ clusterId, config: valid });
      }}
    >
      <label className="flex items-center gap-2 text-sm font-medium">
        <input type="checkbox" checked={form.enabled} onChange={(e) => set("enabled", e.target.checked)} />
        Active probes enabled
      </label>
      <div className="grid gap-4 sm:grid-cols-2">
        <Field label="Protocol" error={err("protocol")}>
          {(p) => (
            <select {...p} className={inputClass} value={form.protocol} onChange={(e) => set("protocol", e.target.value)}>
              {PROBE_PROTOCOLS.map((x) => (
                <option key={x} value={x}>
                  {x.toUpperCase()}
                </option>
              ))}
            </select>
          )}
        </Field>
        {text("port", "Port", "Empty: the server's first inbound's port")}
        {text("intervalS", "Interval (s)", `How often; ${RECOMMENDED_MIN_PROBE_INTERVAL_S} s or more in production`)}
        {text("timeoutS", "Timeout (s)")}
        {text("unhealthyThreshold", "Unhealthy threshold", "Failures in a row before the server is out")}
        {text("healthyThreshold", "Healthy threshold", "Successes in a row to bring it back")}
      </div>
      {http && (
        <fieldset className="grid gap-4 border-t border-slate-100 pt-4 sm:grid-cols-2">
          <legend className="text-sm font-semibold text-slate-700">HTTP request and success match</legend>
          <Field label="Method" error={err("method")}>
            {(p) => (
              <select {...p} className={inputClass} value={form.method} onChange={(e) => set("method", e.target.value)}>
                {PROBE_METHODS.map((x) => (
                  <option key={x}>{x}</option>
                ))}
              </select>
            )}
          </Field>
          {text("path", "Path")}
          {text("hostHeader", "Host header", "Empty: the server's address")}
          {text("statusCodes", "Status codes", "Codes and ranges, e.g. 200-399 or 200,204")}
          <Field label="Request headers" error={err("headers")} hint="One per line: Name: value">
            {(p) => <textarea {...p} rows={3} className={inputClass} value={form.headers} onChange={(e) => set("headers", e.target.value)} />}
          </Field>
          <Field label="Payload" error={err("payload")}>
            {(p) => <textarea {...p} rows={3} className={inputClass} value={form.payload} onChange={(e) => set("payload", e.target.value)} />}
          </Field>
          <Field label="Response headers must be" error={err("headerMatch")} hint="One per line: Name: value">
            {(p) => <textarea {...p} rows={2} className={inputClass} value={form.headerMatch} onChange={(e) => set("headerMatch", e.target.value)} />}
          </Field>
          {text("bodyContains", "Body contains", `Optional, at most ${MAX_BODY_CONTAINS} characters`)}
        </fieldset>
      )}
      <div className="flex items-center gap-3">
        <button type="submit" className={buttonClass} disabled={!valid || !dirty || save.isPending}>
          {save.isPending ? "Saving…" : "Save probe"}
        </button>
        {saved && <span className="text-sm text-green-700">Saved</span>}
        {save.error && Object.keys(serverErrors).length === 0 && (
          <span role="alert" className="text-sm text-red-600">
            {errorMessage(save.error)}
          </span>
        )}
      </div>
    </form>
  );
}

export function ReportIntervalEditor({ clusterId, seconds }: { clusterId: string; seconds: number }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [value, setValue] = useState(String(seconds));
  useEffect(() => setValue(String(seconds)), [seconds]);
  const n = Number(value);
  const error = !Number.isInteger(n) || n < 1 || n > 3600 ? "Report interval must be between 1 and 3600 seconds" : undefined;
  const save = useMutation(
    trpc.monitoring.setReportInterval.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.monitoring.health.queryKey({ clusterId }) }),
    }),
  );
  return (
    <form
      aria-label="Agent report interval"
      className="flex items-end gap-3 rounded-lg border border-slate-200 bg-white p-4"
      onSubmit={(e) => {
        e.preventDefault();
        if (!error) save.mutate({ clusterId, seconds: n });
      }}
    >
      <Field label="Agent report interval (s)" error={error ?? (save.error ? errorMessage(save.error) : undefined)} hint="No report for 3 intervals: No data from server">
        {(p) => <input {...p} className={inputClass} inputMode="numeric" value={value} onChange={(e) => setValue(e.target.value)} />}
      </Field>
      <button type="submit" className={buttonClass} disabled={!!error || n === seconds || save.isPending}>
        Save
      </button>
    </form>
  );
}
