/**
 * The app's tRPC API over HTTP, as scripts and end-to-end tests call it: queries as GET with
 * `?input=`, mutations as POST with Content-Type application/json (the app refuses other
 * bodies), inputs and results in superjson's `{ json, meta }` envelope, the session in a
 * cookie. Scripts log in with `loginToApp` (plain fetch); tests call through a Playwright
 * request context, whose cookies its browser context shares.
 * Without Origin or Sec-Fetch-Site headers the app's cross-origin check lets a script through.
 */
import type { APIRequestContext } from "@playwright/test";
import superjson from "superjson";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@/server/api/root";

/**
 * What a procedure answers, as the router infers it (results are superjson-decoded, so Dates
 * are Dates). Scripts and tests that read an answer take its type from here, not a shape of
 * their own: a field read by a wrong name is a type error, not a check that never fires.
 */
export type RouterOutput = inferRouterOutputs<AppRouter>;
/** One server's row of `monitoring.health`. */
export type HealthServerRow = RouterOutput["monitoring"]["health"]["servers"][number];

export class TrpcCallError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** tRPC's error code (UNAUTHORIZED, FORBIDDEN, …) when the app sent one. */
    readonly code: string | undefined,
    readonly path: string,
  ) {
    super(message);
    this.name = "TrpcCallError";
  }
}

export interface AppClient {
  readonly appUrl: string;
  query<T = unknown>(path: string, input?: unknown): Promise<T>;
  mutation<T = unknown>(path: string, input?: unknown): Promise<T>;
}

/** One HTTP exchange: `url` is relative to the app (/api/trpc/…); `body` is JSON text. */
export type Transport = (req: { method: "GET" | "POST"; url: string; body?: string }) => Promise<{ status: number; text: string }>;

type Envelope = {
  result?: { data?: { json?: unknown; meta?: unknown } };
  error?: { json?: { message?: string; data?: { code?: string } } };
};

/** The URL of a query: the input, if any, superjson-encoded in `?input=`. */
export function queryUrl(path: string, input?: unknown): string {
  const q = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(superjson.serialize(input)))}`;
  return `/api/trpc/${path}${q}`;
}

/** The body of a mutation (no input is sent as null, as tRPC's own client does). */
export function mutationBody(input?: unknown): string {
  return JSON.stringify(superjson.serialize(input ?? null));
}

/** The result of a call, or a TrpcCallError ("path: the app's message", HTTP status, code). */
export function decodeResponse<T>(status: number, text: string, path: string): T {
  let body: Envelope | null = null;
  try {
    body = JSON.parse(text) as Envelope;
  } catch {
    // not JSON (a proxy's error page, an empty 502): the status says enough
  }
  if (status < 200 || status >= 300 || body?.error) {
    throw new TrpcCallError(`${path}: ${body?.error?.json?.message ?? `HTTP ${status}`}`, status, body?.error?.json?.data?.code, path);
  }
  const data = body?.result?.data;
  return (data === undefined ? undefined : superjson.deserialize(data as Parameters<typeof superjson.deserialize>[0])) as T;
}

export function trpcClient(appUrl: string, transport: Transport): AppClient {
  return {
    appUrl,
    async query<T>(path: string, input?: unknown) {
      const res = await transport({ method: "GET", url: queryUrl(path, input) });
      return decodeResponse<T>(res.status, res.text, path);
    },
    async mutation<T>(path: string, input?: unknown) {
      const res = await transport({ method: "POST", url: `/api/trpc/${path}`, body: mutationBody(input) });
      return decodeResponse<T>(res.status, res.text, path);
    },
  };
}

/** The Cookie header that sends back what Set-Cookie set (name=value of each, no attributes). */
export function cookieHeader(setCookie: string[]): string {
  return setCookie
    .map((c) => c.split(";")[0]!.trim())
    .filter((c) => c.includes("="))
    .join("; ");
}

/**
 * Plain fetch with a session cookie. A call gives up after 60 s: a bound for a hang, not for
 * speed (15 s failed a query on a machine busy with other work while the app was only slow).
 */
export function fetchTransport(appUrl: string, cookie?: string): Transport {
  const base = appUrl.replace(/\/+$/, "");
  return async ({ method, url, body }) => {
    const headers: Record<string, string> = { ...(cookie ? { cookie } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) };
    const res = await fetch(`${base}${url}`, { method, headers, body, signal: AbortSignal.timeout(60_000) });
    return { status: res.status, text: await res.text() };
  };
}

export type LoggedInClient = AppClient & { readonly cookie: string };

/** Logs in with auth.login and returns a client carrying the session cookie. */
export async function loginToApp(appUrl: string, username: string, password: string): Promise<LoggedInClient> {
  const base = appUrl.replace(/\/+$/, "");
  let res: Response;
  try {
    res = await fetch(`${base}/api/trpc/auth.login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: mutationBody({ username, password }),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (err) {
    throw new Error(`cannot reach the app at ${base} (${(err as Error).message}): is it running?`, { cause: err });
  }
  decodeResponse(res.status, await res.text(), "auth.login");
  const cookie = cookieHeader(res.headers.getSetCookie?.() ?? []);
  if (!cookie) throw new Error("auth.login returned no session cookie");
  return { ...trpcClient(base, fetchTransport(base, cookie)), cookie };
}

/** Through a Playwright request context (its baseURL is the app; its cookies are the session). */
export function requestTransport(request: APIRequestContext): Transport {
  return async ({ method, url, body }) => {
    const res = method === "GET" ? await request.get(url) : await request.post(url, { data: body, headers: { "content-type": "application/json" } });
    return { status: res.status(), text: await res.text() };
  };
}

export function trpcQuery<T = unknown>(request: APIRequestContext, path: string, input?: unknown): Promise<T> {
  return trpcClient("", requestTransport(request)).query<T>(path, input);
}

export function trpcMutation<T = unknown>(request: APIRequestContext, path: string, input?: unknown): Promise<T> {
  return trpcClient("", requestTransport(request)).mutation<T>(path, input);
}

export function login(request: APIRequestContext, username: string, password: string) {
  return trpcMutation(request, "auth.login", { username, password });
}
