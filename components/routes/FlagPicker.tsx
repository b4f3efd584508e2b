"use client";
import { useId, useMemo, useState } from "react";
import { inputClass } from "@/components/ui/Field";
import { Flag } from "@/components/ui/Flag";
import { countries, countryOf, type Country } from "./countries";

/** A searchable list of countries (by name or code) as a radio group, plus "No flag". */
export function FlagPicker({ value, onChange, error }: { value: string | null; onChange: (code: string | null, country: Country | null) => void; error?: string }) {
  const [query, setQuery] = useState("");
  const searchId = useId();
  const errId = useId();
  const selected = countryOf(value);
  const list = useMemo(() => {
    const q = query.trim().toLowerCase();
    const all = countries();
    if (!q) return all;
    return all.filter((c) => c.name.toLowerCase().includes(q) || c.code.toLowerCase() === q);
  }, [query]);

  return (
    <fieldset className="flex flex-col gap-2" aria-describedby={error ? errId : undefined}>
      <legend className="mb-1 text-sm font-medium text-slate-700">
        Flag{" "}
        <span className="font-normal text-slate-500">
          —{" "}
          {selected ? (
            <>
              <Flag code={selected.code} /> {selected.name}
            </>
          ) : (
            "none"
          )}
        </span>
      </legend>
      <label htmlFor={searchId} className="sr-only">
        Search countries
      </label>
      <input
        id={searchId}
        type="search"
        className={inputClass}
        placeholder="Search countries, e.g. Germany or DE"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        autoComplete="off"
      />
      <div className="max-h-44 overflow-y-auto rounded-md border border-slate-200 bg-white" role="radiogroup" aria-label="Flag">
        <FlagOption checked={value === null} onSelect={() => onChange(null, null)} label="No flag" />
        {list.map((c) => (
          <FlagOption key={c.code} checked={value === c.code} onSelect={() => onChange(c.code, c)} label={c.name} code={c.code} />
        ))}
        {list.length === 0 && <p className="px-3 py-2 text-sm text-slate-500">No country matches “{query}”.</p>}
      </div>
      {error && (
        <p id={errId} role="alert" className="text-sm text-red-600">
          {error}
        </p>
      )}
    </fieldset>
  );
}

function FlagOption({ checked, onSelect, label, code }: { checked: boolean; onSelect: () => void; label: string; code?: string }) {
  return (
    <label className={`flex cursor-pointer items-center gap-2 px-3 py-1.5 text-sm hover:bg-slate-50 ${checked ? "bg-sky-50 font-medium text-sky-900" : "text-slate-700"}`}>
      <input type="radio" name="route-flag" className="h-3.5 w-3.5 shrink-0 accent-sky-600" checked={checked} onChange={onSelect} aria-label={label} />
      <span aria-hidden="true" className="w-6 text-center text-lg leading-none">
        {code ? <Flag code={code} /> : "∅"}
      </span>
      <span className="flex-1">{label}</span>
      {code && <span className="font-mono text-xs text-slate-400">{code}</span>}
    </label>
  );
}
