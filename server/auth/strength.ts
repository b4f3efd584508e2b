/**
 * Password strength: zxcvbn-ts with the common-password list and the English dictionaries.
 * Server-only on purpose: the dictionaries are ~1.5 MB, too much for every dashboard page;
 * the verdict still reaches the form next to the password field (a zod issue on "password").
 */
import { ZxcvbnFactory } from "@zxcvbn-ts/core";
import * as common from "@zxcvbn-ts/language-common";
import * as en from "@zxcvbn-ts/language-en";
import { fieldError } from "@/server/db-errors";

/** zxcvbn's scale is 0–4; 3 means "safely unguessable" (~10^8 guesses and more). */
export const MIN_SCORE = 3;

let factory: ZxcvbnFactory | undefined;
function zxcvbn(): ZxcvbnFactory {
  factory ??= new ZxcvbnFactory({
    dictionary: { ...common.dictionary, ...en.dictionary },
    graphs: common.adjacencyGraphs,
    translations: en.translations,
  });
  return factory;
}

/** Why a password is refused, or null when it is strong enough. `related` = username etc. */
export function passwordWeakness(password: string, related: string[] = []): string | null {
  // zxcvbn's cost grows with length; past 100 characters the score is 4 anyway.
  const sample = password.slice(0, 100);
  const result = zxcvbn().check(sample, related.filter(Boolean));
  const commonPassword = result.sequence.some((m) => m.pattern === "dictionary" && m.dictionaryName.startsWith("passwords") && m.token.length === sample.length);
  if (commonPassword) return "This password is on the list of common passwords: choose another";
  if (result.score >= MIN_SCORE) return null;
  const why = result.feedback.warning ?? result.feedback.suggestions[0] ?? null;
  return `Password is too easy to guess${why ? `: ${why.replace(/\.$/, "")}` : ""}. Use a longer phrase of unrelated words`;
}

/** Refuses a weak password as an error on the form's `field`, shown next to it. */
export function assertStrongPassword(password: string, related: string[], field = "password"): void {
  const weakness = passwordWeakness(password, related);
  if (weakness) throw fieldError("BAD_REQUEST", field, weakness);
}
