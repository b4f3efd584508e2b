/**
 * Cross-field and syntax rules of this project's schemas that the zod → fast-check
 * converter cannot see (superRefine/refine bodies are code). Applied to well-formed inputs
 * so that most of them are really accepted and the fuzz reaches the procedures' bodies;
 * broken inputs are derived afterwards and stay broken.
 */
const STATUS_CODES = ["200-399", "200", "200,204", "200-299,301-308", "100-599"];

export function repairKnownRefinements(v: unknown, depth = 0): unknown {
  if (depth > 8 || typeof v !== "object" || v === null || v instanceof Date) return v;
  if (Array.isArray(v)) return v.map((x) => repairKnownRefinements(x, depth + 1));
  const o: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) o[k] = repairKnownRefinements(x, depth + 1);
  // Probe configs: status codes are a list of codes and ranges; paths have no spaces.
  if (typeof o.statusCodes === "string") o.statusCodes = STATUS_CODES[o.statusCodes.length % STATUS_CODES.length];
  if (typeof o.path === "string" && o.path.startsWith("/")) o.path = o.path.replace(/[\s\0]/g, "");
  // Servers and inbounds: addresses are hosts or IPs, SNIs are host names.
  const hosts = ["198.51.100.7", "2001:db8::1", "vpn.example.com", "xn--80ak6aa92e.example"];
  if (typeof o.address === "string") o.address = hosts[o.address.length % hosts.length];
  if (typeof o.sni === "string") o.sni = ["www.example.com", "cdn.example.net"][o.sni.length % 2];
  // API tokens: names are short words without spaces (the audit log shows "token:<name>").
  if (Array.isArray(o.scopes) && typeof o.name === "string") o.name = `bot-${o.name.replace(/[^A-Za-z0-9._-]/g, "").slice(0, 30)}`;
  // Agent reports: one listenersDown row per inbound, and a listener down means listenerAlive false.
  if (Array.isArray(o.listenersDown) && "listenerAlive" in o) {
    const seen = new Set<unknown>();
    o.listenersDown = o.listenersDown.filter((d: unknown) => {
      const id = typeof d === "object" && d !== null ? (d as { inboundId?: unknown }).inboundId : d;
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
    if ((o.listenersDown as unknown[]).length > 0) o.listenerAlive = false;
  }
  // Agent reports: seq and instance go together, and per-user traffic needs both.
  if ("seq" in o || "instance" in o || "users" in o) {
    if ("listenerAlive" in o) {
      o.seq ??= 1;
      o.instance ??= "fuzz-instance";
    }
  }
  return o;
}
