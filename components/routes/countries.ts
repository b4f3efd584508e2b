import { flagEmoji } from "@/core/format";
import { COUNTRY_CODES } from "@/core/validation";

export interface Country {
  code: string;
  name: string;
  emoji: string;
}

let cache: Country[] | null = null;

/** Every ISO 3166-1 alpha-2 country with its English name and flag emoji, by name. */
export function countries(): Country[] {
  if (cache) return cache;
  let names: Intl.DisplayNames | null = null;
  try {
    names = new Intl.DisplayNames(["en"], { type: "region" });
  } catch {
    names = null;
  }
  cache = COUNTRY_CODES.map((code) => ({ code, name: names?.of(code) ?? code, emoji: flagEmoji(code) })).sort((a, b) => a.name.localeCompare(b.name));
  return cache;
}

export function countryOf(code: string | null | undefined): Country | null {
  if (!code) return null;
  return countries().find((c) => c.code === code.toUpperCase()) ?? null;
}
