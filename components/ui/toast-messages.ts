/**
 * What the toast of each dashboard write says, by tRPC procedure path: success names the
 * thing changed, failure gives the server's message. Pure, so the table is unit-tested.
 * Paths not listed (sign-in, sign-out, dev tooling) show no toast; the diagram's moves show
 * their own (with Undo).
 */

type Vars = Record<string, unknown>;

interface WriteSpec {
  /** The input field holding the id of the thing written (its name is looked up). */
  idKey?: string;
  /** The input field holding its name, when the input carries one. */
  nameKey?: string;
  noun: string;
  /** "create", "delete"…: the failure reads "Could not <verb> <noun> <name>: <why>". */
  verb(v: Vars): string;
  /** `data` is the server's answer (counts of a bulk change). */
  ok(name: string, v: Vars, data: Vars): string;
}

const onOff = (v: Vars) => (v.enabled ? "enable" : "disable");

/** A bulk change of subscribers: what was done to how many (the server counts them). */
function bulkDone(v: Vars, data: Vars): string {
  const action = asVars(v.action);
  const n = typeof data.affected === "number" ? data.affected : 0;
  const who = `${n} subscriber${n === 1 ? "" : "s"}`;
  switch (action.kind) {
    case "enable":
      return `Enabled ${who}`;
    case "disable":
      return `Disabled ${who}`;
    case "extend":
      return `Extended ${who} by ${String(action.days)} day${action.days === 1 ? "" : "s"}`;
    case "resetUsage":
      return `Reset the usage of ${who}`;
    case "delete":
      return `Deleted ${who}`;
    default:
      return `Changed ${who}`;
  }
}

const WRITES: Readonly<Record<string, WriteSpec>> = {
  "routes.create": { nameKey: "name", noun: "route", verb: () => "create", ok: (n) => `Route ${n} created` },
  "routes.update": { idKey: "routeId", nameKey: "name", noun: "route", verb: () => "save", ok: (n) => `Route ${n} saved` },
  "routes.delete": { idKey: "routeId", noun: "route", verb: () => "delete", ok: (n) => `Route ${n} deleted; its inbounds are now unassigned` },
  "topology.reorderRoutes": { noun: "", verb: () => "reorder the routes", ok: () => "Route order saved" },
  "servers.create": { nameKey: "name", noun: "server", verb: () => "add", ok: (n) => `Server ${n} added` },
  "servers.update": { idKey: "serverId", nameKey: "name", noun: "server", verb: () => "save", ok: (n) => `Server ${n} saved` },
  "servers.setEnabled": { idKey: "serverId", noun: "server", verb: onOff, ok: (n, v) => `Server ${n} ${v.enabled ? "enabled" : "disabled"}` },
  "servers.delete": { idKey: "serverId", noun: "server", verb: () => "delete", ok: (n) => `Server ${n} deleted` },
  "servers.rotateToken": { idKey: "serverId", noun: "server", verb: () => "rotate the agent token of", ok: (n) => `New agent token for ${n}` },
  "inbounds.create": { nameKey: "name", noun: "inbound", verb: () => "add", ok: (n) => `Inbound ${n} added` },
  "inbounds.update": { idKey: "inboundId", nameKey: "name", noun: "inbound", verb: () => "save", ok: (n) => `Inbound ${n} saved` },
  "inbounds.delete": { idKey: "inboundId", noun: "inbound", verb: () => "delete", ok: (n) => `Inbound ${n} deleted` },
  "inbounds.setFallback": {
    idKey: "inboundId",
    noun: "inbound",
    verb: () => "change the fallback mark of",
    ok: (n, v) => (v.isFallback ? `${n} is now a fallback of its route` : `${n} is no longer a fallback`),
  },
  "clusters.create": { nameKey: "name", noun: "cluster", verb: () => "create", ok: (n) => `Cluster ${n} created` },
  "clusters.createDemo": { nameKey: "name", noun: "demo cluster", verb: () => "create", ok: (n) => `Demo cluster ${n} created` },
  "clusters.deleteDemo": { noun: "demo cluster", verb: () => "delete", ok: (_n, _v, data) => `Demo cluster ${String(data.name ?? "")} deleted; its simulated agents stopped` },
  "clusters.delete": { noun: "cluster", verb: () => "delete", ok: (_n, _v, data) => `Cluster ${String(data.name ?? "")} deleted` },
  "clusters.rename": { nameKey: "name", noun: "cluster", verb: () => "rename", ok: (n) => `Cluster renamed to ${n}` },
  "subscribers.create": { nameKey: "name", noun: "subscriber", verb: () => "add", ok: (n) => `Subscriber ${n} added` },
  "subscribers.update": { idKey: "subscriberId", nameKey: "name", noun: "subscriber", verb: () => "save", ok: (n) => `Subscriber ${n} saved` },
  "subscribers.setEnabled": { idKey: "subscriberId", noun: "subscriber", verb: onOff, ok: (n, v) => `Subscriber ${n} ${v.enabled ? "enabled" : "disabled"}` },
  "subscribers.resetUsage": { idKey: "subscriberId", noun: "subscriber", verb: () => "reset the usage of", ok: (n) => `Usage of ${n} reset to zero` },
  "subscribers.rotateToken": { idKey: "subscriberId", noun: "subscriber", verb: () => "rotate the link of", ok: (n) => `New subscription link for ${n}; the old one stopped working` },
  "subscribers.bulk": { noun: "", verb: () => "change the selected subscribers", ok: (_n, v, data) => bulkDone(v, data) },
  "subscribers.delete": { idKey: "subscriberId", noun: "subscriber", verb: () => "delete", ok: (n) => `Subscriber ${n} deleted` },
  "operators.create": { nameKey: "username", noun: "operator", verb: () => "add", ok: (n) => `Operator ${n} added` },
  "operators.delete": { idKey: "operatorId", noun: "operator", verb: () => "remove", ok: (n) => `Operator ${n} removed` },
  "operators.setRole": { idKey: "operatorId", noun: "operator", verb: () => "change the role of", ok: (n, v) => `${n} is now ${String(v.role)}` },
  "operators.resetPassword": { idKey: "operatorId", noun: "operator", verb: () => "reset the password of", ok: (n) => `Password of ${n} reset` },
  "auth.changePassword": { noun: "", verb: () => "change your password", ok: () => "Password changed" },
  "apiTokens.create": { nameKey: "name", noun: "API token", verb: () => "create", ok: (n) => `API token ${n} created` },
  "apiTokens.revoke": { idKey: "tokenId", noun: "API token", verb: () => "revoke", ok: (n) => `API token ${n} revoked` },
  "alerts.create": { nameKey: "name", noun: "alert target", verb: () => "add", ok: (n) => `Alert target ${n} added` },
  "alerts.update": { idKey: "targetId", nameKey: "name", noun: "alert target", verb: () => "save", ok: (n) => `Alert target ${n} saved` },
  "alerts.delete": { idKey: "targetId", noun: "alert target", verb: () => "delete", ok: (n) => `Alert target ${n} deleted` },
  "alerts.sendTest": { idKey: "targetId", noun: "alert target", verb: () => "send a test alert to", ok: (n) => `Test alert sent to ${n}` },
  "monitoring.setProbeConfig": { noun: "", verb: () => "save the health probe settings", ok: () => "Health probe settings saved" },
  "monitoring.setServerProbeOverride": { idKey: "serverId", noun: "server", verb: () => "save the probe override of", ok: (n) => `Probe override of ${n} saved` },
  "monitoring.setReportInterval": { noun: "", verb: () => "save the report interval", ok: (_n, v) => `Agents now report every ${String(v.seconds)} s` },
};

/** The procedure path of a tRPC mutation key ([["servers","setEnabled"]] → "servers.setEnabled"). */
export function procedurePath(mutationKey: unknown): string | null {
  if (!Array.isArray(mutationKey)) return null;
  const parts = mutationKey[mutationKey.length - 1];
  return Array.isArray(parts) && parts.every((p) => typeof p === "string") ? parts.join(".") : null;
}

/** Whether a write at this path gets a toast. */
export function hasWriteToast(path: string | null): path is string {
  return path !== null && Object.hasOwn(WRITES, path);
}

/** The id the name of the written thing is looked up by, if the input gives no name. */
export function subjectId(path: string, vars: unknown): string | null {
  const spec = WRITES[path];
  const v = asVars(vars);
  if (!spec?.idKey || (spec.nameKey && typeof v[spec.nameKey] === "string")) return null;
  const id = v[spec.idKey];
  return typeof id === "string" ? id : null;
}

/**
 * The toast of a finished write: `name` is the written thing's name found before the write
 * (deleting removes it from every list), null when unknown.
 */
export function writeToast(
  path: string,
  vars: unknown,
  outcome: { ok: true; data?: unknown } | { ok: false; message: string },
  name: string | null,
): { kind: "success" | "error"; text: string } | null {
  const spec = WRITES[path];
  if (!spec) return null;
  const v = asVars(vars);
  const given = spec.nameKey && typeof v[spec.nameKey] === "string" ? (v[spec.nameKey] as string) : null;
  const subject = given ?? name;
  if (outcome.ok) {
    const data = asVars(outcome.data);
    if (subject !== null) return { kind: "success", text: spec.ok(subject, v, data) };
    // Name unknown: "Server deleted", "Usage of the subscriber reset to zero".
    const text = spec.ok(UNKNOWN, v, data);
    const noun = spec.noun.charAt(0).toUpperCase() + spec.noun.slice(1);
    return { kind: "success", text: text.replace(`${noun} ${UNKNOWN}`, noun).replaceAll(UNKNOWN, `the ${spec.noun}`) };
  }
  const what = spec.noun ? `${spec.noun}${subject ? ` ${subject}` : ""}` : "";
  return { kind: "error", text: `Could not ${[spec.verb(v), what].filter(Boolean).join(" ")}: ${outcome.message}` };
}

const UNKNOWN = "\u0000";

function asVars(vars: unknown): Vars {
  return vars && typeof vars === "object" ? (vars as Vars) : {};
}

/**
 * The name of the object with this id anywhere in cached query data (lists of servers,
 * the topology, subscribers…): its `name`, else its `username`. Searches a few levels deep.
 */
export function findName(roots: readonly unknown[], id: string, maxDepth = 5): string | null {
  const seen = new Set<object>();
  const visit = (x: unknown, depth: number): string | null => {
    if (!x || typeof x !== "object" || depth > maxDepth || seen.has(x)) return null;
    seen.add(x);
    if (Array.isArray(x)) {
      for (const item of x) {
        const found = visit(item, depth + 1);
        if (found) return found;
      }
      return null;
    }
    const o = x as Record<string, unknown>;
    if (o.id === id) {
      if (typeof o.name === "string") return o.name;
      if (typeof o.username === "string") return o.username;
    }
    for (const value of Object.values(o)) {
      const found = visit(value, depth + 1);
      if (found) return found;
    }
    return null;
  };
  for (const r of roots) {
    const found = visit(r, 0);
    if (found) return found;
  }
  return null;
}
