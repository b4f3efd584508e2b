/**
 * A small client for the app's tRPC HTTP API, as scripts use it: log in once (session
 * cookie), then queries and mutations with the superjson envelope `{ json: input }`.
 */

export class AppCallError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly path: string,
  ) {
    super(message);
    this.name = "AppCallError";
  }
}

export interface AppClient {
  readonly appUrl: string;
  query<T = unknown>(path: string, input?: unknown): Promise<T>;
  mutation<T = unknown>(path: string, input?: unknown): Promise<T>;
}

type Envelope = { result?: { data?: { json?: unknown } }; error?: { json?: { message?: string } } };

async function unwrap<T>(res: Response, path: string): Promise<T> {
  const body = (await res.json().catch(() => null)) as Envelope | null;
  if (!res.ok || body?.error) {
    throw new AppCallError(`${path}: ${body?.error?.json?.message ?? `HTTP ${res.status}`}`, res.status, path);
  }
  return body?.result?.data?.json as T;
}

function client(appUrl: string, cookie: string): AppClient {
  const base = appUrl.replace(/\/+$/, "");
  return {
    appUrl: base,
    async query<T>(path: string, input?: unknown) {
      const q = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify({ json: input }))}`;
      const res = await fetch(`${base}/api/trpc/${path}${q}`, { headers: { cookie }, signal: AbortSignal.timeout(15_000) });
      return unwrap<T>(res, path);
    },
    async mutation<T>(path: string, input?: unknown) {
      const res = await fetch(`${base}/api/trpc/${path}`, {
        method: "POST",
        headers: { cookie, "content-type": "application/json" },
        body: JSON.stringify({ json: input ?? null }),
        signal: AbortSignal.timeout(30_000),
      });
      return unwrap<T>(res, path);
    },
  };
}

/** Logs in with auth.login and returns a client carrying the session cookie. */
export async function loginToApp(appUrl: string, username: string, password: string): Promise<AppClient> {
  const base = appUrl.replace(/\/+$/, "");
  let res: Response;
  try {
    res = await fetch(`${base}/api/trpc/auth.login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ json: { username, password } }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    throw new Error(`cannot reach the app at ${base} (${(err as Error).message}): is it running?`);
  }
  await unwrap(res, "auth.login");
  const setCookie = res.headers.getSetCookie?.() ?? [];
  const cookie = setCookie.map((c) => c.split(";")[0]).join("; ");
  if (!cookie) throw new Error("auth.login returned no session cookie");
  return client(base, cookie);
}
