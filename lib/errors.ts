import { TRPCClientError } from "@trpc/client";

/** The message to show an operator for a failed call. */
export function errorMessage(err: unknown): string {
  if (err instanceof TRPCClientError) {
    const data = err.data as { fieldErrors?: Record<string, string> | null; httpStatus?: number } | undefined;
    const first = data?.fieldErrors ? Object.values(data.fieldErrors)[0] : undefined;
    if (first) return first;
    if (err.message && !err.message.startsWith("[")) return err.message;
    if (data?.httpStatus === 503) return "The server is unavailable right now: nothing was saved.";
  }
  if (err instanceof Error && err.message) return err.message === "Failed to fetch" ? "Cannot reach Routeboard: check your connection." : err.message;
  return "Something went wrong";
}

/** Field → message from a failed call, for forms that show messages next to fields. */
export function fieldErrors(err: unknown): Record<string, string> {
  if (err instanceof TRPCClientError) {
    const data = err.data as { fieldErrors?: Record<string, string> | null } | undefined;
    return data?.fieldErrors ?? {};
  }
  return {};
}

export function httpStatus(err: unknown): number | undefined {
  return err instanceof TRPCClientError ? (err.data as { httpStatus?: number } | undefined)?.httpStatus : undefined;
}

/**
 * What a form shows after a failed call: messages per field (the server's, overridden by
 * the browser's own checks) and, when no field is to blame, one message for the form.
 */
export function formErrors(err: unknown, clientErrors: Record<string, string> = {}): { errors: Record<string, string>; general: string | null } {
  const server = fieldErrors(err);
  return {
    errors: { ...server, ...clientErrors },
    general: err && Object.keys(server).length === 0 ? errorMessage(err) : null,
  };
}
