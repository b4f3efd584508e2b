"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useContext, useId, useMemo, useState } from "react";
import { DiagramStoreContext } from "@/components/diagram/store";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass } from "@/components/ui/Field";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { nameSchema } from "@/core/validation";
import { ALGORITHM_LABELS, ALGORITHM_SENTENCES, ALGORITHMS, DEFAULT_ALGORITHM, DEFAULT_LINE_NAME, routeLineName, type Algorithm, type LineName } from "@/core/format";
import { FlagPicker } from "./FlagPicker";

export interface RouteDraft {
  id: string;
  name: string;
  flag: string | null;
  algorithm: string;
}

/**
 * The route wizard: how clients see the route, how it balances, and (for a new route) which
 * inbounds it takes. Nothing is written until the operator confirms.
 */
export function RouteWizard({ clusterId, route, onClose }: { clusterId: string; route?: RouteDraft; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const editing = !!route;
  const topology = useQuery(trpc.topology.get.queryOptions({ clusterId }));
  const [name, setName] = useState(route?.name ?? "");
  const [nameTouched, setNameTouched] = useState(editing);
  const [flag, setFlag] = useState<string | null>(route?.flag ?? null);
  const [algorithm, setAlgorithm] = useState<Algorithm>((route?.algorithm as Algorithm) ?? DEFAULT_ALGORITHM);
  // null = not touched: an edit then keeps the saved choice (read from the topology, which may still be loading).
  const [lineNameChoice, setLineName] = useState<LineName | null>(null);
  const lineNameGroup = useId();
  const [pool, setPool] = useState<Set<string>>(new Set());
  const [clientErrors, setClientErrors] = useState<Record<string, string>>({});
  const algoName = useId();

  // Opened from the diagram: the saved route is scrolled into view and highlighted there.
  const diagram = useContext(DiagramStoreContext);
  const done = async (saved: { id: string }) => {
    diagram?.setState({ focusRoute: saved.id });
    await queryClient.invalidateQueries({ queryKey: trpc.topology.get.queryKey() });
    onClose();
  };
  const create = useMutation(trpc.routes.create.mutationOptions({ onSuccess: done }));
  const update = useMutation(trpc.routes.update.mutationOptions({ onSuccess: done }));
  const mutation = editing ? update : create;
  const { errors, general: generalError } = formErrors(mutation.error, clientErrors);

  const savedLineName = editing ? topology.data?.routes.find((r) => r.id === route.id)?.lineName : undefined;
  const lineName: LineName = lineNameChoice ?? savedLineName ?? DEFAULT_LINE_NAME;
  const routeNames = useMemo(() => new Map((topology.data?.routes ?? []).map((r) => [r.id, r.name])), [topology.data]);
  const groups = useMemo(() => {
    const t = topology.data;
    if (!t) return [];
    return t.servers
      .map((s) => ({ server: s, inbounds: t.inbounds.filter((i) => i.serverId === s.id) }))
      .filter((g) => g.inbounds.length > 0);
  }, [topology.data]);

  const validateName = (value: string) => {
    const r = nameSchema.safeParse(value);
    const dup = r.success && topology.data?.routes.some((x) => x.id !== route?.id && x.name.toLowerCase() === r.data.toLowerCase());
    setClientErrors((e) => {
      const next = { ...e };
      delete next.name;
      if (!r.success) next.name = r.error.issues[0]!.message;
      else if (dup) next.name = `A route named "${r.data}" already exists in this cluster`;
      return next;
    });
    return r.success && !dup;
  };

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    mutation.reset();
    if (!validateName(name)) return;
    if (editing) update.mutate({ routeId: route.id, name, flag, algorithm, ...(lineNameChoice ? { lineName: lineNameChoice } : {}) });
    else create.mutate({ clusterId, name, flag, algorithm, lineName, inboundIds: [...pool] });
  };

  const moving = [...pool].filter((id) => topology.data?.inbounds.find((i) => i.id === id)?.routeId);

  return (
    <Dialog title={editing ? `Edit route ${route.name}` : "New route"} onClose={onClose} size="lg" description={editing ? undefined : "A non-empty route is one line in every user's server list."}>
      <form onSubmit={submit} noValidate className="flex flex-col gap-7">
        <section aria-labelledby="wizard-look" className="flex flex-col gap-4">
          <h3 id="wizard-look" className="flex items-center gap-2 text-base font-semibold text-slate-900">
            <Step n={1} /> How clients see this route
          </h3>
          <Field
            label="Name"
            error={errors.name}
            hint="Your signboard for this route in the dashboard, e.g. “🇺🇸 USA”. VPN apps list the name of the inbound the balancer picked for each user, unless you choose this route’s name below."
          >
            {(p) => (
              <input
                {...p}
                data-autofocus
                className={inputClass}
                value={name}
                maxLength={200}
                placeholder="🇺🇸 USA"
                onChange={(e) => {
                  setName(e.target.value);
                  setNameTouched(true);
                  if (errors.name) {
                    mutation.reset();
                    validateName(e.target.value);
                  }
                }}
                onBlur={() => nameTouched && name !== "" && validateName(name)}
              />
            )}
          </Field>
          <FlagPicker
            value={flag}
            error={errors.flag}
            onChange={(code, country) => {
              setFlag(code);
              if (country && !nameTouched && name.trim() === "") setName(`${country.emoji} ${country.name}`);
            }}
          />
          <fieldset className="flex flex-col gap-2">
            <legend className="mb-1 text-sm font-medium text-slate-700">Name in the VPN app’s server list</legend>
            {(
              [
                ["inbound", "The chosen inbound’s name (default)", "Each user sees the inbound the balancer picked for them, e.g. “🇺🇸 New York”; it changes when they are moved."],
                ["route", "This route’s name", `Everyone sees “${routeLineName(name.trim() || "…", flag)}”, whichever inbound serves them: one stable name.`],
              ] as const
            ).map(([value, label, sentence]) => (
              <label
                key={value}
                className={`flex cursor-pointer gap-3 rounded-lg border p-3 text-sm ${lineName === value ? "border-sky-500 bg-sky-50 ring-1 ring-sky-500" : "border-slate-200 hover:border-slate-300"}`}
              >
                {/* Named by its title alone, the sentence as its description: the sentence quotes the route's name. */}
                <input
                  type="radio"
                  name={lineNameGroup}
                  value={value}
                  checked={lineName === value}
                  onChange={() => setLineName(value)}
                  aria-labelledby={`${lineNameGroup}-${value}`}
                  aria-describedby={`${lineNameGroup}-${value}-says`}
                  className="mt-0.5 accent-sky-600"
                />
                <span>
                  <span id={`${lineNameGroup}-${value}`} className="block font-medium text-slate-900">
                    {label}
                  </span>
                  <span id={`${lineNameGroup}-${value}-says`} className="mt-0.5 block text-slate-600">
                    {sentence}
                  </span>
                </span>
              </label>
            ))}
            {errors.lineName && (
              <p role="alert" className="text-sm text-red-600">
                {errors.lineName}
              </p>
            )}
          </fieldset>
        </section>

        <section aria-labelledby="wizard-algo" className="flex flex-col gap-3">
          <h3 id="wizard-algo" className="flex items-center gap-2 text-base font-semibold text-slate-900">
            <Step n={2} /> Load-balancing algorithm
          </h3>
          <div role="radiogroup" aria-labelledby="wizard-algo" className="grid gap-2 sm:grid-cols-2">
            {ALGORITHMS.map((a) => (
              <label
                key={a}
                className={`flex cursor-pointer gap-3 rounded-lg border p-3 text-sm ${algorithm === a ? "border-sky-500 bg-sky-50 ring-1 ring-sky-500" : "border-slate-200 hover:border-slate-300"}`}
              >
                <input type="radio" name={algoName} value={a} checked={algorithm === a} onChange={() => setAlgorithm(a)} className="mt-0.5 accent-sky-600" />
                <span>
                  <span className="block font-medium text-slate-900">
                    {ALGORITHM_LABELS[a]}
                    {a === DEFAULT_ALGORITHM && <span className="ml-1.5 text-xs font-normal text-slate-500">(default)</span>}
                  </span>
                  <span className="mt-0.5 block text-slate-600">{ALGORITHM_SENTENCES[a]}</span>
                </span>
              </label>
            ))}
          </div>
        </section>

        {!editing && (
          <section aria-labelledby="wizard-pool" className="flex flex-col gap-3">
            <h3 id="wizard-pool" className="flex items-center gap-2 text-base font-semibold text-slate-900">
              <Step n={3} /> Inbounds in pool <span className="text-sm font-normal text-slate-500">(optional)</span>
            </h3>
            <p className="-mt-1 text-sm text-slate-600">An empty route is a placeholder: users don’t see it until it has an inbound.</p>
            {topology.isLoading && <p className="text-sm text-slate-500">Loading inbounds…</p>}
            {topology.data && groups.length === 0 && <p className="text-sm text-slate-500">This cluster has no inbounds yet.</p>}
            <div className="grid max-h-72 gap-3 overflow-y-auto pr-1 sm:grid-cols-2">
              {groups.map(({ server, inbounds }) => (
                <fieldset key={server.id} className="rounded-lg border border-slate-200 p-3">
                  <legend className="px-1 text-xs font-semibold uppercase tracking-wide text-slate-500">
                    {server.name} <span className="font-normal normal-case">{server.address}</span>
                  </legend>
                  <ul className="flex flex-col gap-1">
                    {inbounds.map((i) => {
                      const from = i.routeId ? routeNames.get(i.routeId) : null;
                      const hintId = `pool-hint-${i.id}`;
                      const checked = pool.has(i.id);
                      return (
                        <li key={i.id}>
                          <label className="flex cursor-pointer items-start gap-2 rounded px-1 py-1 text-sm hover:bg-slate-50">
                            <input
                              type="checkbox"
                              className="mt-0.5 accent-sky-600"
                              checked={checked}
                              aria-label={i.name}
                              aria-describedby={hintId}
                              onChange={(e) =>
                                setPool((p) => {
                                  const next = new Set(p);
                                  if (e.target.checked) next.add(i.id);
                                  else next.delete(i.id);
                                  return next;
                                })
                              }
                            />
                            <span className="flex flex-1 flex-wrap items-baseline gap-x-2">
                              <span className="font-medium text-slate-800">{i.name}</span>
                              <span id={hintId} className={`text-xs ${from ? (checked ? "font-medium text-amber-700" : "text-amber-700/80") : "text-slate-500"}`}>
                                :{i.port} · {from ? `moves from ${from}` : "unassigned"}
                              </span>
                            </span>
                          </label>
                        </li>
                      );
                    })}
                  </ul>
                </fieldset>
              ))}
            </div>
            {errors.inboundIds && (
              <p role="alert" className="text-sm text-red-600">
                {errors.inboundIds}
              </p>
            )}
          </section>
        )}

        <FormFooter
          error={generalError}
          pending={mutation.isPending}
          submitLabel={editing ? "Save route" : "Create route"}
          onCancel={onClose}
          note={!editing && (pool.size === 0 ? "Empty route" : `${pool.size} inbound${pool.size === 1 ? "" : "s"}${moving.length ? `, ${moving.length} moving from other routes` : ""}`)}
        />
      </form>
    </Dialog>
  );
}

function Step({ n }: { n: number }) {
  return (
    <span aria-hidden="true" className="inline-flex h-6 w-6 items-center justify-center rounded-full bg-sky-100 text-xs font-bold text-sky-700">
      {n}
    </span>
  );
}
