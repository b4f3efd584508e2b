import type { NextConfig } from "next";
import { securityHeaders } from "./server/http/headers";

const nextConfig: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  // The pages are client components that talk to /api/trpc; server code is never bundled.
  // Types are checked once by `npm run typecheck` (part of `npm test`), not again per build.
  typescript: { ignoreBuildErrors: true },
  // The static files too (scripts, styles, the icon): nosniff, no framing. Pages also get
  // their CSP with a nonce from proxy.ts.
  async headers() {
    const headers = Object.entries(securityHeaders()).map(([key, value]) => ({ key, value }));
    return [{ source: "/:path*", headers }];
  },
};

export default nextConfig;
