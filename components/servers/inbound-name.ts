/**
 * An inbound's flag lives in its name ("🇺🇸 New York": what VPN apps show). These helpers let
 * the form pick the flag from a list instead of asking the operator to type an emoji.
 */
import { flagEmoji } from "@/core/format";

/** Two regional indicator symbols at the start of the name, then optional spaces. */
const LEADING_FLAG = /^([\u{1F1E6}-\u{1F1FF}]{2})\s*/u;

/** The ISO code of the flag the name starts with, or null. */
export function leadingFlagCode(name: string): string | null {
  const m = LEADING_FLAG.exec(name);
  if (!m) return null;
  return [...m[1]!].map((c) => String.fromCharCode(c.codePointAt(0)! - 0x1f1e6 + 65)).join("");
}

/** The name with its leading flag replaced by `code`'s (or removed, for null). */
export function nameWithFlag(name: string, code: string | null): string {
  const rest = name.replace(LEADING_FLAG, "");
  const emoji = flagEmoji(code);
  return emoji ? `${emoji} ${rest}` : rest;
}
