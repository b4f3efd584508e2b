"use client";
import { useQuery } from "@tanstack/react-query";
import { Dialog, DialogActions } from "@/components/ui/Dialog";
import { CopyableCode } from "@/components/ui/CopyButton";
import { buttonClass } from "@/components/ui/Field";
import { useTRPC } from "@/lib/trpc";
import { agentOneLiner, agentSystemdUnit, SYSTEMD_UNIT_PATH } from "./agent-install";

/**
 * Shows a server's agent token once, with what really starts its agent: a one-liner that
 * downloads the bundle from this panel and runs it, and a systemd unit. Both use the panel's
 * public URL (PUBLIC_URL); without it, this page's origin stands in and a warning says so.
 */
export function AgentTokenDialog({ serverName, token, rotated, onClose }: { serverName: string; token: string; rotated?: boolean; onClose: () => void }) {
  const trpc = useTRPC();
  // auth.status carries PUBLIC_URL (null when unset), as for subscription links.
  const install = useQuery(trpc.auth.status.queryOptions());
  const origin = typeof window === "undefined" ? "" : window.location.origin;
  const publicUrl = install.data?.publicUrl ?? null;
  const ready = install.isSuccess || install.isError;
  const panelUrl = publicUrl ?? origin;
  const command = agentOneLiner(panelUrl, token);
  const unit = agentSystemdUnit(panelUrl, token);
  return (
    <Dialog title={`Agent token for ${serverName}`} onClose={onClose}>
      <div className="flex flex-col gap-4 text-sm">
        <p className="rounded-md bg-amber-50 px-3 py-2 text-amber-900 ring-1 ring-amber-600/20">
          <strong>This token is shown only once.</strong> Routeboard keeps only a hash of it: copy it now.
          {rotated && " The previous token has stopped working."}
        </p>
        <div>
          <div className="mb-1 font-medium text-slate-700">Agent token</div>
          <CopyableCode text={token} testId="agent-token" />
        </div>
        {ready && publicUrl === null && (
          <p data-testid="agent-public-url-warning" role="alert" className="rounded-md bg-amber-50 px-3 py-2 text-xs text-amber-900 ring-1 ring-amber-600/20">
            <strong>PUBLIC_URL is not set</strong>, so these commands use this page’s address ({origin}). Set <code>PUBLIC_URL</code> to the address your
            VPN servers reach the panel at, and restart Routeboard.
          </p>
        )}
        {ready && (
          <>
            <div>
              <div className="mb-1 font-medium text-slate-700">Start the agent on {serverName} (as root, with Node ≥ 20)</div>
              <CopyableCode text={command} testId="agent-command" label="Copy command" tone="dark" />
              <p className="mt-2 text-xs text-slate-500">
                It runs Xray-core on the server, which serves every inbound but h2. Debian’s <code>v2ray</code> 4.34 (replace <code>--core xray</code> with{" "}
                <code>--core v2ray</code>) serves VLESS, VMess and Trojan over tcp, ws and h2 with TLS or none; Reality, Shadowsocks, gRPC, HTTPUpgrade and XHTTP need
                Xray-core. An inbound its core cannot serve is reported not served and handed to no one. The agent reports the moment it starts; until its
                first report the server shows “Waiting for first check”, or “Health probe failing” once the probe finds nothing answering on an
                inbound’s port.
              </p>
            </div>
            <div>
              <div className="mb-1 font-medium text-slate-700">
                Or keep it running with systemd: save as <code>{SYSTEMD_UNIT_PATH}</code> (mode 600: it holds the token), then run{" "}
                <code>systemctl daemon-reload && systemctl enable --now routeboard-agent</code>
              </div>
              <CopyableCode text={unit} testId="agent-systemd-unit" label="Copy unit" tone="block" />
            </div>
          </>
        )}
        <DialogActions>
          <button type="button" className={buttonClass} onClick={onClose}>
            I’ve saved it
          </button>
        </DialogActions>
      </div>
    </Dialog>
  );
}
