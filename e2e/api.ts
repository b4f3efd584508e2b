/**
 * Talking to a running app the way scripts do: tRPC over HTTP (superjson envelope), with the
 * session cookie of a Playwright request context (shared with its browser context).
 */
import type { APIRequestContext } from "@playwright/test";

export class TrpcCallError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

async function unwrap(res: Awaited<ReturnType<APIRequestContext["get"]>>) {
  const body = (await res.json().catch(() => null)) as
    | { result?: { data?: { json?: unknown } }; error?: { json?: { message?: string; data?: { code?: string } } } }
    | null;
  if (!res.ok() || body?.error) {
    throw new TrpcCallError(body?.error?.json?.message ?? `HTTP ${res.status()}`, res.status(), body?.error?.json?.data?.code);
  }
  return body?.result?.data?.json;
}

export async function trpcQuery<T = unknown>(request: APIRequestContext, path: string, input?: unknown): Promise<T> {
  const q = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify({ json: input }))}`;
  return (await unwrap(await request.get(`/api/trpc/${path}${q}`))) as T;
}

export async function trpcMutation<T = unknown>(request: APIRequestContext, path: string, input?: unknown): Promise<T> {
  return (await unwrap(await request.post(`/api/trpc/${path}`, { data: { json: input ?? null } }))) as T;
}

export async function login(request: APIRequestContext, username: string, password: string) {
  return trpcMutation(request, "auth.login", { username, password });
}
