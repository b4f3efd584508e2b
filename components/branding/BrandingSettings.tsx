"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { Field, buttonClass, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { useCanEdit } from "@/components/AppShell";
import { brandingSchema, DEFAULT_BRAND_TITLE, LOGO_IMAGE_TYPES, LOGO_MAX_BYTES, type Branding } from "@/core/branding";
import { errorMessage, fieldErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";

type Form = { title: string; logo: string; supportUrl: string; accentColor: string; backgroundColor: string; showSubscriberName: boolean };
const TEXT_FIELDS = ["title", "logo", "supportUrl", "accentColor", "backgroundColor"] as const;

function toForm(b: Branding | null | undefined): Form {
  return {
    title: b?.title ?? "",
    logo: b?.logo ?? "",
    supportUrl: b?.supportUrl ?? "",
    accentColor: b?.accentColor ?? "",
    backgroundColor: b?.backgroundColor ?? "",
    showSubscriberName: b?.showSubscriberName ?? false,
  };
}

/**
 * The subscribers' public page brand of one cluster (issue 25 point 7): what a subscriber's
 * browser and app show instead of the internal cluster and subscriber names. Shown to
 * everyone, edited by admins; the server checks the same schema (core/branding.ts).
 */
export function BrandingSettings({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const canEdit = useCanEdit();
  const cluster = useQuery(trpc.clusters.get.queryOptions({ clusterId }));
  const current = cluster.data?.branding;
  const [form, setForm] = useState<Form>(toForm(null));
  const [dirty, setDirty] = useState(false);
  const [saved, setSaved] = useState(false);
  const [uploadError, setUploadError] = useState<string | null>(null);
  useEffect(() => {
    if (!dirty && cluster.data) setForm(toForm(current));
  }, [cluster.data, current, dirty]);

  const parsed = useMemo(() => brandingSchema.safeParse(form), [form]);
  const localErrors = useMemo(() => {
    const out: Record<string, string> = {};
    if (!parsed.success) for (const i of parsed.error.issues) out[String(i.path[0])] ??= i.message;
    return out;
  }, [parsed]);
  const save = useMutation(
    trpc.clusters.setBranding.mutationOptions({
      onSuccess: async () => {
        setDirty(false);
        setSaved(true);
        await queryClient.invalidateQueries({ queryKey: trpc.clusters.get.queryKey({ clusterId }) });
      },
    }),
  );
  const serverErrors = save.error ? fieldErrors(save.error) : {};
  const errorOf = (k: string) => (dirty ? localErrors[k] : undefined) ?? serverErrors[`branding.${k}`];
  const formError = save.error && Object.keys(serverErrors).length === 0 ? errorMessage(save.error) : null;

  const set = (patch: Partial<Form>) => {
    setForm((f) => ({ ...f, ...patch }));
    setDirty(true);
    setSaved(false);
    save.reset();
  };

  const upload = (file: File | undefined) => {
    setUploadError(null);
    if (!file) return;
    if (!(LOGO_IMAGE_TYPES as readonly string[]).includes(file.type)) return setUploadError("Logo must be a PNG, JPEG, GIF or WebP image");
    if (file.size > LOGO_MAX_BYTES) return setUploadError(`Logo image must be at most ${LOGO_MAX_BYTES / 1024} KB`);
    const reader = new FileReader();
    reader.onload = () => set({ logo: String(reader.result) });
    reader.onerror = () => setUploadError("Could not read the file");
    reader.readAsDataURL(file);
  };

  const labels: Record<(typeof TEXT_FIELDS)[number], { label: string; hint: string }> = {
    title: { label: "Title", hint: `What the page and the subscribers' apps show as the profile name. Empty: "${DEFAULT_BRAND_TITLE}".` },
    logo: { label: "Logo URL", hint: `An https:// image URL, or upload a PNG, JPEG, GIF or WebP of at most ${LOGO_MAX_BYTES / 1024} KB.` },
    supportUrl: { label: "Support link", hint: "https://…, tg://resolve?domain=… or mailto:…" },
    accentColor: { label: "Accent colour", hint: "Buttons and the usage bar, as #rrggbb." },
    backgroundColor: { label: "Background colour", hint: "The page's background, as #rrggbb." },
  };

  return (
    <main className="mx-auto max-w-3xl p-4 sm:p-6">
      <h1 className="text-2xl font-semibold">Subscriber page</h1>
      <p className="mt-1 text-sm text-slate-600">
        What subscribers see at their subscription URL and in their apps. The cluster&apos;s and subscribers&apos; own names stay internal unless
        you choose to show them. The page&apos;s own words follow the subscriber&apos;s browser language (English, Russian, Persian, Chinese).
      </p>
      {cluster.error && (
        <p role="alert" className="mt-3 text-red-700">
          {errorMessage(cluster.error)}
        </p>
      )}
      {cluster.data && (
        <form
          aria-label="Subscriber page brand"
          className="mt-5 flex flex-col gap-4 rounded-lg border border-slate-200 bg-white p-4"
          onSubmit={(e) => {
            e.preventDefault();
            if (parsed.success) save.mutate({ clusterId, branding: form });
          }}
        >
          {TEXT_FIELDS.map((k) => (
            <Field key={k} label={labels[k].label} hint={labels[k].hint} error={errorOf(k) ?? (k === "logo" ? (uploadError ?? undefined) : undefined)}>
              {(p) => (
                <div className="flex items-center gap-2">
                  <input
                    {...p}
                    className={`${inputClass} min-w-0 flex-1`}
                    value={k === "logo" && form.logo.startsWith("data:") ? "" : form[k]}
                    placeholder={k === "logo" && form.logo.startsWith("data:") ? "Uploaded image" : undefined}
                    readOnly={!canEdit}
                    spellCheck={false}
                    onChange={(e) => set({ [k]: e.target.value })}
                  />
                  {(k === "accentColor" || k === "backgroundColor") && /^#[0-9a-f]{6}$/i.test(form[k]) && (
                    <span aria-hidden="true" className="h-8 w-8 shrink-0 rounded border border-slate-300" style={{ background: form[k] }} />
                  )}
                </div>
              )}
            </Field>
          ))}
          {canEdit && (
            <div className="flex flex-wrap items-center gap-3 text-sm">
              <label className={secondaryButtonClass}>
                Upload logo
                <input type="file" className="sr-only" accept={LOGO_IMAGE_TYPES.join(",")} onChange={(e) => upload(e.target.files?.[0])} />
              </label>
              {form.logo && (
                <button type="button" className={secondaryButtonClass} onClick={() => set({ logo: "" })}>
                  Remove logo
                </button>
              )}
              {form.logo.startsWith("data:") && !localErrors.logo && <img src={form.logo} alt="Logo preview" referrerPolicy="no-referrer" className="max-h-10 max-w-32" />}
            </div>
          )}
          <label className="flex items-center gap-2 text-sm">
            <input type="checkbox" checked={form.showSubscriberName} disabled={!canEdit} onChange={(e) => set({ showSubscriberName: e.target.checked })} />
            Show the subscriber&apos;s name on the page
          </label>
          {formError && (
            <p role="alert" className="text-sm text-red-600">
              {formError}
            </p>
          )}
          {canEdit && (
            <div className="flex items-center gap-3">
              <button type="submit" className={buttonClass} disabled={!parsed.success || !dirty || save.isPending}>
                {save.isPending ? "Saving…" : "Save brand"}
              </button>
              {saved && (
                <span role="status" className="text-sm text-green-700">
                  Saved: subscribers&apos; pages and apps show it from their next visit
                </span>
              )}
            </div>
          )}
        </form>
      )}
    </main>
  );
}
