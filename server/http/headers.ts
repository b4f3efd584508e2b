/**
 * Security headers. Browser-safe and dependency-free so that proxy.ts (Next's request
 * hook for the pages) and the node:http routes (machine endpoints, /api/trpc) share them.
 */

/** Headers every response gets: no framing, no MIME sniffing, no full URLs in Referer. */
export function securityHeaders(): Record<string, string> {
  return {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "strict-origin-when-cross-origin",
  };
}

/**
 * For machine endpoints (JSON, text, subscriptions): nothing in them may load or run
 * anything. Inline styles and data: images stay allowed for a plain HTML answer that needs
 * no script; the subscriber's page (GET /sub/<token> from a browser) sends its own,
 * SUBSCRIBER_PAGE_CSP in server/subscription/page.ts.
 */
export const MACHINE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The dashboard's policy: scripts only with this response's nonce (Next puts it on its own
 * scripts; 'strict-dynamic' lets them load the chunks). Styles may be inline: React Flow
 * positions every node with a style attribute, which a nonce cannot cover.
 */
export function pageCsp(nonce: string, dev: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ""}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}
