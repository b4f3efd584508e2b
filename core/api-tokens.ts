/**
 * API tokens for shops and bots: the scopes, what each allows, and the token's shape.
 * Browser-safe: the server checks tokens against these, the tokens page lists them.
 */

export const API_SCOPES = ["read", "subscribers:write", "topology:write", "backup"] as const;
export type ApiScope = (typeof API_SCOPES)[number];

export const API_SCOPE_TEXT: Record<ApiScope, string> = {
  read: "Read: every query (clusters, servers, routes, subscribers and their usage, health, audit)",
  "subscribers:write": "Subscribers: create, edit, extend, enable, disable, rotate links, delete",
  "topology:write": "Topology: clusters, servers, inbounds, routes, probes",
  backup: "Backup: download a full backup of the embedded database and its secrets (GET /api/backup; owner's tokens only)",
};

/**
 * `rbt_<id>_<secret>`: a recognisable prefix (secret scanners and log greps find it), the
 * token's public id (16 hex digits: the lookup key, shown in the list) and a 256-bit secret
 * in base64url (43 characters), of which the server keeps only the SHA-256.
 */
export const API_TOKEN_PREFIX = "rbt_";
export const API_TOKEN_PATTERN = /^rbt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/**
 * Days a new token lives unless the operator picks otherwise: a token copied into a shop's
 * config or a bot's environment leaks easily and silently, so it should stop working on
 * its own; 90 days is long enough that renewing it is a quarterly chore, not a weekly one.
 */
export const API_TOKEN_DEFAULT_DAYS = 90;
