"use client";
import { CopyButton } from "@/components/ui/CopyButton";
import type { InboundRow } from "./servers-view";

/** What a client or the server's operator needs to copy: Reality's public key and short id, TLS paths. */
export function InboundKeys({ inbound: i }: { inbound: InboundRow }) {
  const copy = "rounded px-1.5 py-0.5 text-xs text-indigo-700 hover:bg-indigo-50 focus:outline-none focus-visible:ring-2 focus-visible:ring-indigo-500";
  if (i.security === "reality") {
    return (
      <dl className="mt-1 grid grid-cols-[auto_1fr] items-center gap-x-2 text-xs text-slate-600">
        <dt>Public key</dt>
        <dd className="flex items-center gap-1">
          <code className="break-all font-mono" aria-label={`Public key of ${i.name}`}>{i.realityPublicKey ?? "—"}</code>
          {i.realityPublicKey && <CopyButton text={i.realityPublicKey} label="Copy" className={copy} />}
        </dd>
        <dt>Short id</dt>
        <dd className="flex items-center gap-1">
          <code className="font-mono" aria-label={`Short id of ${i.name}`}>{i.realityShortId || "(empty)"}</code>
          {i.realityShortId && <CopyButton text={i.realityShortId} label="Copy" className={copy} />}
          {i.realityShortIds.length > 1 && <span className="text-slate-400">+{i.realityShortIds.length - 1} more</span>}
        </dd>
        <dt>Dest</dt>
        <dd className="font-mono">{i.realityDest ?? (i.sni ? `${i.sni}:443` : "—")}</dd>
      </dl>
    );
  }
  if (i.security === "tls") {
    return (
      <dl className="mt-1 grid grid-cols-[auto_1fr] gap-x-2 text-xs text-slate-600">
        <dt>Certificate</dt>
        <dd className="break-all font-mono">{i.tlsCertificateFile ?? "— (not set: the agent cannot serve it)"}</dd>
        <dt>Key</dt>
        <dd className="break-all font-mono">{i.tlsKeyFile ?? "—"}</dd>
      </dl>
    );
  }
  return null;
}
