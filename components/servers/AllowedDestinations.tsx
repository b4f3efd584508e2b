"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { Field, buttonClass, inputClass } from "@/components/ui/Field";
import { allowedPrivateDestinationsSchema } from "@/core/validation";
import { MAX_ALLOWED_DESTINATIONS } from "@/core/edge";
import { errorMessage, fieldErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";

/** The textarea's lines as entries (blank lines ignored) and the first error, naming its line. */
export function parseDestinationLines(text: string): { list: string[]; error: string | null } {
  const list = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const r = allowedPrivateDestinationsSchema.safeParse(list);
  if (r.success) return { list: r.data, error: null };
  const issue = r.error.issues[0]!;
  const index = typeof issue.path[0] === "number" ? issue.path[0] : null;
  return { list, error: index === null ? issue.message : `Line ${index + 1}: ${issue.message}` };
}

/**
 * The cluster's exceptions to the edge boundary (issue 21, point 1): subscribers reach no
 * loopback, private, link-local, CGNAT, ULA or multicast address and none of the servers' own,
 * except the exact destinations listed here. Shown to everyone, edited by admins.
 */
export function AllowedDestinations({ clusterId, canEdit }: { clusterId: string; canEdit: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const cluster = useQuery(trpc.clusters.get.queryOptions({ clusterId }));
  const current = cluster.data?.allowedPrivateDestinations;
  const [text, setText] = useState("");
  const [dirty, setDirty] = useState(false);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (!dirty && current) setText(current.join("\n"));
  }, [current, dirty]);
  const parsed = useMemo(() => parseDestinationLines(text), [text]);
  const save = useMutation(
    trpc.clusters.setAllowedPrivateDestinations.mutationOptions({
      onSuccess: async () => {
        setDirty(false);
        setSaved(true);
        await queryClient.invalidateQueries({ queryKey: trpc.clusters.get.queryKey({ clusterId }) });
      },
    }),
  );
  const serverError = save.error
    ? (() => {
        const [key, message] = Object.entries(fieldErrors(save.error))[0] ?? [];
        const index = key ? /^destinations\.(\d+)$/.exec(key)?.[1] : undefined;
        return message ? (index !== undefined ? `Line ${Number(index) + 1}: ${message}` : message) : errorMessage(save.error);
      })()
    : undefined;

  return (
    <section aria-labelledby="allowed-destinations" className="mt-8 rounded-lg border border-slate-200 bg-white p-4">
      <h2 id="allowed-destinations" className="text-lg font-semibold">
        Allowed private destinations
      </h2>
      <p className="mt-1 text-sm text-slate-600">
        Subscribers&apos; traffic never reaches a server&apos;s own network: loopback, private ranges (10/8, 172.16/12, 192.168/16), link-local
        (169.254/16, cloud metadata), CGNAT (100.64/10), IPv6 loopback, ULA and link-local, multicast, and each server&apos;s own addresses go
        nowhere. The core&apos;s API port stays closed whatever is listed here.
      </p>
      <div role="note" className="mt-3 rounded-md border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-900">
        <strong>Warning:</strong> each destination listed here is open to <em>every subscriber of this cluster, through every server</em>. List
        exact addresses and ports, and only services meant for subscribers.
      </div>
      {current && current.length > 0 ? (
        <ul aria-label="Allowed destinations" className="mt-3 flex flex-wrap gap-2">
          {current.map((d) => (
            <li key={d} className="rounded bg-amber-100 px-2 py-0.5 font-mono text-sm text-amber-900">
              {d}
            </li>
          ))}
        </ul>
      ) : (
        cluster.data && <p className="mt-3 text-sm text-slate-600">None: every private destination is closed to subscribers.</p>
      )}
      {canEdit && cluster.data && (
        <form
          aria-label="Allowed private destinations"
          className="mt-4 flex flex-col gap-3"
          onSubmit={(e) => {
            e.preventDefault();
            if (!parsed.error) save.mutate({ clusterId, destinations: parsed.list });
          }}
        >
          <Field
            label="Destinations, one per line"
            error={parsed.error ?? serverError}
            hint={`ip[:port] or cidr[:port], e.g. 10.0.0.5:5432, 10.0.0.0/24:80, [fd00::7]:8080; at most ${MAX_ALLOWED_DESTINATIONS}. Empty: none.`}
          >
            {(p) => (
              <textarea
                {...p}
                rows={4}
                spellCheck={false}
                className={`${inputClass} font-mono`}
                value={text}
                onChange={(e) => {
                  setText(e.target.value);
                  setDirty(true);
                  setSaved(false);
                  save.reset();
                }}
              />
            )}
          </Field>
          <div className="flex items-center gap-3">
            <button type="submit" className={buttonClass} disabled={!!parsed.error || !dirty || save.isPending}>
              {save.isPending ? "Saving…" : "Save destinations"}
            </button>
            {saved && (
              <span role="status" className="text-sm text-green-700">
                Saved: servers get the new rules within seconds
              </span>
            )}
          </div>
        </form>
      )}
    </section>
  );
}
