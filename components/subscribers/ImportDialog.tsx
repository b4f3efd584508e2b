"use client";
import { useState } from "react";
import { Dialog, DialogActions } from "@/components/ui/Dialog";
import { Field, buttonClass, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { FormAlert } from "@/components/ui/FormAlert";
import type { ImportReport } from "@/server/import/engine";

const SOURCES = [
  { value: "marzban", label: "Marzban (db.sqlite3, MySQL dump or API JSON)" },
  { value: "remnawave", label: "Remnawave (users API JSON)" },
  { value: "3x-ui", label: "3x-ui (x-ui.db or inbounds API JSON)" },
  { value: "csv", label: "CSV" },
] as const;
type Source = (typeof SOURCES)[number]["value"];

const n = (x: number) => x.toLocaleString("en");

/**
 * Import subscribers from another panel's file (POST /api/import): a dry run first, which
 * shows the counts and every row refused, then the import itself. All or nothing.
 */
export function ImportDialog({ clusterId, onClose, onImported }: { clusterId: string; onClose: () => void; onImported: () => void }) {
  const [source, setSource] = useState<Source>("marzban");
  const [file, setFile] = useState<File | null>(null);
  const [prefix, setPrefix] = useState("");
  const [host, setHost] = useState("");
  const [secret, setSecret] = useState("");
  const [report, setReport] = useState<ImportReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const changed = () => {
    setReport(null);
    setError(null);
  };

  const send = async (dryRun: boolean) => {
    if (!file) {
      setError("Choose the file to import");
      return;
    }
    setPending(true);
    setError(null);
    try {
      const q = new URLSearchParams({ cluster: clusterId, from: source, ...(dryRun ? { dryRun: "1" } : {}), ...(prefix.trim() ? { prefix: prefix.trim() } : {}), ...(host.trim() ? { host: host.trim() } : {}) });
      const res = await fetch(`/api/import?${q}`, {
        method: "POST",
        headers: { "content-type": "application/octet-stream", ...(source === "marzban" && secret.trim() ? { "x-marzban-secret": secret.trim() } : {}) },
        body: file,
      });
      const body = (await res.json().catch(() => ({ error: `The server answered ${res.status}` }))) as ImportReport | { error: string };
      if ("error" in body) {
        setReport(null);
        setError(body.error);
      } else {
        setReport(body);
        if (body.imported) onImported();
      }
    } catch {
      setError("Cannot reach the server: check your connection and try again");
    } finally {
      setPending(false);
    }
  };

  const ready = report && report.dryRun && report.errorCount === 0;
  return (
    <Dialog title="Import subscribers" description="From another panel's export: UUIDs, Trojan passwords, limits, expiry, usage and old subscription links are kept. Nothing is written until you import, and then all rows or none." onClose={onClose} size="lg">
      <div className="flex flex-col gap-3">
        <Field label="Source">
          {(p) => (
            <select
              {...p}
              className={inputClass}
              value={source}
              onChange={(e) => {
                setSource(e.target.value as Source);
                changed();
              }}
            >
              {SOURCES.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="File">
          {(p) => (
            <input
              {...p}
              type="file"
              className={inputClass}
              onChange={(e) => {
                setFile(e.target.files?.[0] ?? null);
                changed();
              }}
            />
          )}
        </Field>
        <details className="text-sm">
          <summary className="cursor-pointer text-slate-600">Old subscription links</summary>
          <div className="mt-2 grid gap-3 sm:grid-cols-2">
            <Field label="Path prefix" hint="Default: /sub/ (Remnawave: the root of its subscription host)">
              {(p) => (
                <input
                  {...p}
                  className={inputClass}
                  placeholder="/sub/"
                  value={prefix}
                  onChange={(e) => {
                    setPrefix(e.target.value);
                    changed();
                  }}
                />
              )}
            </Field>
            <Field label="Host" hint="Only with a prefix of /: the old subscription domain">
              {(p) => (
                <input
                  {...p}
                  className={inputClass}
                  placeholder="sub.example.com"
                  value={host}
                  onChange={(e) => {
                    setHost(e.target.value);
                    changed();
                  }}
                />
              )}
            </Field>
            {source === "marzban" && (
              <Field label="Marzban secret key" hint="For API JSON only (its database carries it): select secret_key from jwt">
                {(p) => (
                  <input
                    {...p}
                    className={inputClass}
                    autoComplete="off"
                    value={secret}
                    onChange={(e) => {
                      setSecret(e.target.value);
                      changed();
                    }}
                  />
                )}
              </Field>
            )}
          </div>
        </details>
        {error && <FormAlert>{error}</FormAlert>}
        {report && <ImportReportView report={report} />}
      </div>
      <DialogActions>
        <button type="button" className={secondaryButtonClass} onClick={onClose}>
          {report?.imported ? "Done" : "Cancel"}
        </button>
        {!report?.imported && (
          <button type="button" className={ready ? secondaryButtonClass : buttonClass} disabled={pending} onClick={() => void send(true)}>
            {pending && !ready ? "Checking…" : "Dry run"}
          </button>
        )}
        {ready && (
          <button type="button" className={buttonClass} disabled={pending} onClick={() => void send(false)}>
            {pending ? "Importing…" : `Import ${n(report.created)} subscriber${report.created === 1 ? "" : "s"}`}
          </button>
        )}
      </DialogActions>
    </Dialog>
  );
}

function ImportReportView({ report }: { report: ImportReport }) {
  const counts: Array<[string, number]> = [
    ["Rows read", report.rows],
    [report.imported ? "Created" : "Would create", report.created],
    ["Old links kept", report.legacyLinks],
    ["Rows refused", report.errorCount],
    ["Of which clashes", report.conflicts],
    ["Warnings", report.warningCount],
  ];
  return (
    <section aria-label="Import report" className="flex flex-col gap-3">
      <p role="status" className={report.errorCount > 0 ? "font-medium text-red-700" : "font-medium text-emerald-700"}>
        {report.imported
          ? `Imported ${n(report.created)} subscribers.`
          : report.errorCount > 0
            ? `${n(report.errorCount)} row${report.errorCount === 1 ? "" : "s"} cannot be imported: fix them and try again. Nothing was written.`
            : `Ready: ${n(report.created)} subscribers would be created. Nothing was written yet.`}
      </p>
      <dl className="grid grid-cols-3 gap-2 text-sm sm:grid-cols-6">
        {counts.map(([label, value]) => (
          <div key={label} className="rounded border border-slate-200 p-2">
            <dt className="text-xs text-slate-500">{label}</dt>
            <dd className="font-semibold">{n(value)}</dd>
          </div>
        ))}
      </dl>
      {report.errors.length > 0 && <IssueTable caption="Rows refused" issues={report.errors} more={report.errorCount - report.errors.length} />}
      {report.warnings.length > 0 && <IssueTable caption="Warnings" issues={report.warnings} more={report.warningCount - report.warnings.length} />}
    </section>
  );
}

function IssueTable({ caption, issues, more }: { caption: string; issues: ImportReport["errors"]; more: number }) {
  return (
    <div className="max-h-64 overflow-auto rounded border border-slate-200">
      <table className="w-full text-left text-sm">
        <caption className="px-2 py-1 text-left font-medium">{caption}</caption>
        <thead className="bg-slate-50 text-xs text-slate-500">
          <tr>
            <th className="px-2 py-1">Row</th>
            <th className="px-2 py-1">Why</th>
          </tr>
        </thead>
        <tbody>
          {issues.map((i, k) => (
            <tr key={k} className="border-t border-slate-100">
              <td className="px-2 py-1 whitespace-nowrap">{i.ref}</td>
              <td className="px-2 py-1">{i.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {more > 0 && <p className="px-2 py-1 text-xs text-slate-500">…and {n(more)} more</p>}
    </div>
  );
}
