"use client";
import { useQuery } from "@tanstack/react-query";
import QRCode from "qrcode";
import { useEffect, useState } from "react";
import { useLinkOrigin } from "@/components/AppShell";
import { DEFAULT_BRAND_TITLE } from "@/core/branding";
import { CopyButton } from "@/components/ui/CopyButton";
import { Dialog, DialogActions } from "@/components/ui/Dialog";
import { buttonClass } from "@/components/ui/Field";
import { appLinks, subscriptionUrl } from "@/lib/subscription-links";
import { useTRPC } from "@/lib/trpc";

/** `<origin>/sub/<token>`: the same rule as the subscriber's page (lib/subscription-links). */
export const subscriptionLink = subscriptionUrl;

const small = "rounded px-2 py-1 text-xs font-medium text-slate-600 hover:bg-slate-100 hover:text-slate-900";

/**
 * The subscription link of a subscriber, to copy, scan, or open in an app: the URL and one
 * "add to app" deep link per app, each with its QR code, as the subscriber's own page has.
 */
export function LinkDialog({ name, token, clusterId, onClose }: { name: string; token: string; clusterId: string; onClose: () => void }) {
  return (
    <Dialog title={`Subscription link of ${name}`} onClose={onClose} size="md" description="Add it in the VPN app as a subscription, open it in an app from this device, or scan the code.">
      <LinkPanel name={name} token={token} clusterId={clusterId} />
      <DialogActions>
        <button type="button" className={buttonClass} onClick={onClose}>
          Done
        </button>
      </DialogActions>
    </Dialog>
  );
}

/** The link, its QR code and the per-app links: in the dialog above, and on the subscriber's page (Links & QR). */
export function LinkPanel({ name, token, clusterId }: { name: string; token: string; clusterId: string }) {
  const trpc = useTRPC();
  const { origin, publicUrlSet, known } = useLinkOrigin();
  const cluster = useQuery(trpc.clusters.get.queryOptions({ clusterId }));
  const link = subscriptionUrl(origin, token);
  // The profile name apps show: the brand's title, as the subscription's profile-title says.
  const apps = appLinks(link, cluster.data?.branding?.title ?? DEFAULT_BRAND_TITLE);
  const choices = [{ id: "url", app: "Subscription URL", href: link }, ...apps];
  const [selected, setSelected] = useState("url");
  const shown = choices.find((c) => c.id === selected) ?? choices[0]!;
  const [qr, setQr] = useState<{ href: string; data: string } | null>(null);
  const [qrError, setQrError] = useState(false);
  useEffect(() => {
    let live = true;
    QRCode.toDataURL(shown.href, { margin: 1, width: 280, errorCorrectionLevel: "M" })
      .then((data) => live && setQr({ href: shown.href, data }))
      .catch(() => live && setQrError(true));
    return () => {
      live = false;
    };
  }, [shown.href]);
  return (
    <>
      {known && !publicUrlSet && (
        <p role="alert" data-testid="public-url-warning" className="mb-3 rounded-md border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-900">
          PUBLIC_URL is not set: these links use this browser&apos;s address ({origin}). If subscribers reach the panel by another name (a private hostname, a tunnel), set PUBLIC_URL
          to the address they use.
        </p>
      )}
      <div className="flex flex-col items-center gap-4">
        {qr && qr.href === shown.href ? (
          <img src={qr.data} alt={`QR code: ${shown.app} (${name})`} width={280} height={280} className="rounded-md ring-1 ring-slate-200" />
        ) : (
          <div className="flex h-[280px] w-[280px] items-center justify-center rounded-md bg-slate-100 text-sm text-slate-500">{qrError ? "Could not draw the QR code" : "Drawing…"}</div>
        )}
        <div className="flex w-full items-start gap-2">
          <code data-testid="subscription-link" className="flex-1 break-all rounded-md bg-slate-100 px-3 py-2 font-mono text-xs text-slate-900">
            {link}
          </code>
          <CopyButton text={link} label="Copy link" />
        </div>
        <ul aria-label="Add to app" className="w-full divide-y divide-slate-100 rounded-md border border-slate-200 text-sm">
          {choices.map((c) => (
            <li key={c.id} data-app={c.id} className="flex items-center gap-2 px-3 py-1.5">
              <span className="flex-1 font-medium text-slate-800">{c.app}</span>
              {c.id !== "url" && (
                <a href={c.href} className={small} aria-label={`Add to ${c.app}`}>
                  Open in app
                </a>
              )}
              <button type="button" className={small} aria-pressed={c.id === shown.id} onClick={() => setSelected(c.id)} aria-label={`QR code for ${c.app}`}>
                {c.id === shown.id ? "QR shown" : "QR"}
              </button>
              <CopyButton text={c.href} label="Copy" className={small} />
            </li>
          ))}
        </ul>
      </div>
    </>
  );
}
