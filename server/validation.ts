/**
 * The input rules shared by every tRPC procedure and by the forms that call them, so the
 * browser and the server say the same thing about the same field.
 */
import { isIP } from "node:net";
import { z } from "zod";

// Control characters, and the bidi overrides/isolates that can make a name display as
// something else. Right-to-left text itself is fine; so are emoji joiners.
const FORBIDDEN_CHARS = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u;

export const NAME_MAX = 64;

/** A display name: trimmed, 1–64 characters (code points), no control characters. */
export const nameSchema = z
  .string({ error: "Name is required" })
  .max(NAME_MAX * 8, `Name must be at most ${NAME_MAX} characters`)
  .transform((s) => s.trim())
  .refine((s) => s.length > 0, "Name is required")
  .refine((s) => [...s].length <= NAME_MAX, `Name must be at most ${NAME_MAX} characters`)
  .refine((s) => !FORBIDDEN_CHARS.test(s), "Name must not contain control characters");

export const portSchema = z.coerce
  .number({ error: "Port must be a number" })
  .int("Port must be a whole number")
  .min(1, "Port must be between 1 and 65535")
  .max(65535, "Port must be between 1 and 65535");

const HOSTNAME = /^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\.?$/i;

/** A public address: an IPv4/IPv6 address or a hostname. */
export const addressSchema = z
  .string({ error: "Address is required" })
  .max(300, "Address is too long")
  .transform((s) => s.trim())
  .refine((s) => s.length > 0, "Address is required")
  .refine((s) => isIP(s.replace(/^\[|\]$/g, "")) !== 0 || HOSTNAME.test(s), "Address must be a hostname or an IP address");

export const coefficientSchema = z.coerce
  .number({ error: "Coefficient must be a number" })
  .min(0.1, "Coefficient must be between 0.1 and 100")
  .max(100, "Coefficient must be between 0.1 and 100");

export const idSchema = z.uuid("Not a valid id");

export const usernameSchema = z
  .string()
  .transform((s) => s.trim())
  .refine((s) => /^[\p{L}\p{N}._@-]{1,64}$/u.test(s), "Username: 1–64 letters, digits, dots, dashes, @ or _");

export const passwordSchema = z
  .string()
  .min(8, "Password must be at least 8 characters")
  .max(512, "Password must be at most 512 characters");
