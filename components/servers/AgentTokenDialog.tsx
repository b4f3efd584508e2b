"use client";
import { Dialog, DialogActions } from "@/components/ui/Dialog";
import { CopyButton } from "@/components/ui/CopyButton";
import { buttonClass } from "@/components/ui/Field";
import { useDashboardOrigin } from "@/components/AppShell";

/**
 * Shows a server's agent token once, with the command that starts its agent. The agent's
 * environment contract: ROUTEBOARD_URL (this dashboard's origin) and ROUTEBOARD_AGENT_TOKEN.
 */
export function AgentTokenDialog({ serverName, token, rotated, onClose }: { serverName: string; token: string; rotated?: boolean; onClose: () => void }) {
  const origin = useDashboardOrigin();
  const command = `ROUTEBOARD_URL=${origin} ROUTEBOARD_AGENT_TOKEN=${token} npx routeboard-agent`;
  return (
    <Dialog title={`Agent token for ${serverName}`} onClose={onClose}>
      <div className="flex flex-col gap-4 text-sm">
        <p className="rounded-md bg-amber-50 px-3 py-2 text-amber-900 ring-1 ring-amber-600/20">
          <strong>This token is shown only once.</strong> Routeboard keeps only a hash of it: copy it now.
          {rotated && " The previous token has stopped working."}
        </p>
        <div>
          <div className="mb-1 font-medium text-slate-700">Agent token</div>
          <div className="flex items-center gap-2">
            <code data-testid="agent-token" className="flex-1 break-all rounded-md bg-slate-100 px-3 py-2 font-mono text-xs text-slate-900">
              {token}
            </code>
            <CopyButton text={token} />
          </div>
        </div>
        <div>
          <div className="mb-1 font-medium text-slate-700">Start the agent on {serverName}</div>
          <div className="flex items-start gap-2">
            <code data-testid="agent-command" className="flex-1 break-all rounded-md bg-slate-900 px-3 py-2 font-mono text-xs text-slate-100">
              {command}
            </code>
            <CopyButton text={command} label="Copy command" />
          </div>
          <p className="mt-2 text-xs text-slate-500">
            The agent reads <code>ROUTEBOARD_URL</code> and <code>ROUTEBOARD_AGENT_TOKEN</code> and reports to <code>/api/agent/report</code> every
            reporting interval. Until its first report the server shows “Waiting for first check”.
          </p>
        </div>
        <DialogActions>
          <button type="button" className={buttonClass} onClick={onClose}>
            I’ve saved it
          </button>
        </DialogActions>
      </div>
    </Dialog>
  );
}
