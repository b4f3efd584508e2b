/**
 * Next's request hook (Next 16's name for middleware), for the dashboard pages only: the
 * node:http server in server/main.ts answers /api/trpc, /sub and the agent routes before
 * Next sees them. Every page gets a fresh CSP nonce, the way Next documents it: the policy
 * goes on the request too, where Next reads the nonce for its own scripts.
 */
import { NextResponse, type NextRequest } from "next/server";
import { pageCsp, securityHeaders } from "@/server/http/headers";

export function proxy(request: NextRequest) {
  const nonce = btoa(crypto.randomUUID());
  const csp = pageCsp(nonce, process.env.NODE_ENV === "development");
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set("x-nonce", nonce);
  requestHeaders.set("content-security-policy", csp);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set("content-security-policy", csp);
  for (const [name, value] of Object.entries(securityHeaders())) response.headers.set(name, value);
  return response;
}

export const config = {
  matcher: [
    // Every page request, prefetches included (Next-Router-Prefetch, RSC, Purpose: prefetch):
    // a prefetched page is shown without another request, so its answer needs the policy
    // too (issue 21, point 12). Static files carry no script.
    { source: "/((?!_next/static|_next/image|favicon.svg).*)" },
  ],
};
