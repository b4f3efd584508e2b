"use client";
import QRCode from "qrcode";
import { useEffect, useState } from "react";
import { CopyButton } from "@/components/ui/CopyButton";
import { Dialog, DialogActions } from "@/components/ui/Dialog";
import { buttonClass } from "@/components/ui/Field";
import { useDashboardOrigin } from "@/components/AppShell";

export function subscriptionLink(origin: string, token: string): string {
  return `${origin}/sub/${token}`;
}

/** The subscription link of a subscriber, to copy or to scan with the VPN app. */
export function LinkDialog({ name, token, onClose }: { name: string; token: string; onClose: () => void }) {
  const link = subscriptionLink(useDashboardOrigin(), token);
  const [qr, setQr] = useState<string | null>(null);
  const [qrError, setQrError] = useState(false);
  useEffect(() => {
    let live = true;
    QRCode.toDataURL(link, { margin: 1, width: 280, errorCorrectionLevel: "M" })
      .then((url) => live && setQr(url))
      .catch(() => live && setQrError(true));
    return () => {
      live = false;
    };
  }, [link]);
  return (
    <Dialog title={`Subscription link of ${name}`} onClose={onClose} size="sm" description="Add it in the VPN app (v2rayNG, Hiddify, Streisand…) as a subscription, or scan the code.">
      <div className="flex flex-col items-center gap-4">
        {qr ? (
          <img src={qr} alt={`QR code of the subscription link of ${name}`} width={280} height={280} className="rounded-md ring-1 ring-slate-200" />
        ) : (
          <div className="flex h-[280px] w-[280px] items-center justify-center rounded-md bg-slate-100 text-sm text-slate-500">{qrError ? "Could not draw the QR code" : "Drawing…"}</div>
        )}
        <div className="flex w-full items-start gap-2">
          <code data-testid="subscription-link" className="flex-1 break-all rounded-md bg-slate-100 px-3 py-2 font-mono text-xs text-slate-900">
            {link}
          </code>
          <CopyButton text={link} label="Copy link" />
        </div>
      </div>
      <DialogActions>
        <button type="button" className={buttonClass} onClick={onClose}>
          Done
        </button>
      </DialogActions>
    </Dialog>
  );
}
