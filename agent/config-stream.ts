/**
 * The panel's config answer read as it arrives (issue 23, point 6: a million users in under
 * 500 MB). The body is never one string and never parsed whole: every top-level field but
 * `users` is small and parsed as usual, `users` is cut into batches of about 60 KB that are
 * parsed and checked one at a time, so only the users themselves stay. A user equal to one of
 * the previous config (same email and id) is that config's object, so a change costs memory
 * for what changed only.
 *
 * The rules and the errors are agentConfigSchema's (core/agent-wire.ts): a user entry is
 * checked by hand (zod would copy a million objects) and, when it fails, by agentUserSchema
 * for the message; everything else by zod. A body that is not JSON is reported as such before
 * any field, as JSON.parse would.
 */
import { agentConfigSchema, agentUserSchema, sameAgentUser, type AgentConfig, type AgentUser } from "../core/agent-wire";
import { formatZodError } from "../core/zod-format";

/** Characters of users per JSON.parse: its objects are checked (and mostly dropped) while young. */
const USERS_BATCH_CHARS = 60 * 1024;

/** z.uuid()'s own pattern, so the hand check accepts exactly what the schema does. */
const UUID = schemaPattern();

const EMAIL_MIN = agentUserSchema.shape.email.minLength ?? 0;
const EMAIL_MAX = agentUserSchema.shape.email.maxLength ?? Infinity;

function schemaPattern(): RegExp {
  const pattern = agentUserSchema.shape.id._zod.def.pattern;
  if (!pattern) throw new Error("agentUserSchema's id has no pattern: the hand check in config-stream.ts needs one");
  return pattern;
}

/** A top-level `users` array, read in batches: its entries, or the first bad one's error. */
export type UsersRead = { users: AgentUser[] } | { error: string };

export interface ConfigBody {
  /** Every top-level field but a `users` array, parsed. */
  fields: Record<string, unknown>;
  /** The `users` array when the body has one (a `users` that is no array stays in `fields`). */
  users?: UsersRead;
}

/** True when `v` passes agentUserSchema, without copying it. */
/** 1 when `key` is there and valid (or undefined, as the schema takes it), 0 when absent, null when invalid. */
function optionalKey(v: Record<string, unknown>, key: "plan" | "password", max: number): number | null {
  if (!Object.hasOwn(v, key)) return 0;
  const value = v[key];
  if (value === undefined) return 1;
  if (typeof value !== "string" || value.length < 1) return null;
  // zod counts code points: past the bound in UTF-16 units the schema decides.
  return value.length <= max || agentUserSchema.shape[key].safeParse(value).success ? 1 : null;
}

export function isAgentUser(v: unknown): v is AgentUser {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  let keys = 0;
  for (const _key in v) keys++;
  const { id, email } = v as Record<string, unknown>;
  // A plan (issue 27 point 2) and a kept Trojan password (point 1) are the optional keys.
  const plan = optionalKey(v as Record<string, unknown>, "plan", 64);
  const password = optionalKey(v as Record<string, unknown>, "password", 128);
  if (plan === null || password === null || keys !== 2 + plan + password) return false;
  if (typeof id !== "string" || !UUID.test(id) || typeof email !== "string" || email.length < EMAIL_MIN) return false;
  // zod counts code points: past the bound in UTF-16 units the schema decides (rare: emails are ids).
  return email.length <= EMAIL_MAX || agentUserSchema.shape.email.safeParse(email).success;
}

/**
 * An entry the hand check refused, through agentUserSchema: its error as formatZodError words
 * it for the whole config (users[index].field), or the user should the schema take it after all.
 */
function checkedBySchema(v: unknown, index: number): { user: AgentUser } | { error: string } {
  const parsed = agentUserSchema.safeParse(v);
  if (parsed.success) return { user: parsed.data };
  return { error: formatZodError({ issues: parsed.error.issues.map((issue) => ({ ...issue, path: ["users", index, ...issue.path] })) }) };
}

class NotJson extends Error {}

/**
 * A run of array entries that are objects without nesting whose strings hold no quote or
 * backslash (every user entry the panel writes): where the run ends, the scan is outside any
 * string and nesting, as it is at its start, so the character-by-character scan can skip it.
 * What it skips is still checked by JSON.parse with the rest of its batch.
 */
const FLAT_ENTRY = String.raw`\{(?:"[^"\\]*"|[^"{}[\]\\])*\}`;
const FLAT_ENTRIES = new RegExp(String.raw`\s*${FLAT_ENTRY}(?:\s*,\s*${FLAT_ENTRY})*`, "y");

const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

type Mode = "open" | "key" | "colon" | "valueStart" | "value" | "users" | "after" | "done";

/**
 * A JSON object fed text in pieces. Values are found by their extent (strings and nesting
 * followed), then parsed by JSON.parse, which checks them; the object around them is checked
 * here. Text is never joined into more than one value or batch: a growing buffer of a 90 MB
 * body would be copied at every piece.
 */
class ConfigBodyParser {
  /** The piece being scanned. */
  private buf = "";
  private pos = 0;
  /** Where the value being read starts in buf; its text from earlier pieces is in `pending`. */
  private mark = 0;
  private pending: string[] = [];
  private pendingChars = 0;
  private mode: Mode = "open";
  private firstMember = true;
  private depth = 0;
  private inString = false;
  /** The previous piece ended on a backslash inside a string: the next character is escaped. */
  private escaped = false;
  private keyText = "";
  private key = "";
  private readonly members: Array<{ key: string; text: string }> = [];
  // users
  private users: AgentUser[] | null = null;
  private usersError: string | null = null;
  private usersSeen = 0;
  /** A batch was cut off at a comma: an empty batch after it is a missing entry. */
  private usersCut = false;
  private prevAt = 0;

  constructor(
    private readonly previous: readonly AgentUser[],
    private readonly batchChars: number,
  ) {}

  write(text: string): void {
    this.buf = text;
    this.pos = 0;
    this.mark = 0;
    this.run();
    // The piece is scanned: what the current value has of it waits for the value's end.
    if (this.mark < this.buf.length && this.mode !== "done") {
      this.pending.push(this.buf.slice(this.mark));
      this.pendingChars += this.buf.length - this.mark;
    }
  }

  end(): ConfigBody {
    if (this.mode !== "done") throw new NotJson("the body ends early");
    const fields = JSON.parse(`{${this.members.map((m) => m.text).join(",")}}`) as Record<string, unknown>;
    if (this.users === null && this.usersError === null) return { fields };
    return { fields, users: this.usersError !== null ? { error: this.usersError } : { users: this.users! } };
  }

  /** The text from the mark (in this or earlier pieces) to `to`; the mark moves there. */
  private take(to: number): string {
    let text = this.buf.slice(this.mark, to);
    if (this.pending.length > 0) {
      text = this.pending.join("") + text;
      this.pending = [];
      this.pendingChars = 0;
    }
    this.mark = to;
    return text;
  }

  private skipSpace(): boolean {
    while (this.pos < this.buf.length && isSpace(this.buf.charCodeAt(this.pos))) this.pos++;
    this.mark = this.pos;
    return this.pos < this.buf.length;
  }

  private run(): void {
    for (;;) {
      switch (this.mode) {
        case "open":
          if (!this.skipSpace()) return;
          if (this.buf.charCodeAt(this.pos) !== 123) throw new NotJson("not an object");
          this.pos++;
          this.mode = "key";
          break;
        case "key": {
          if (!this.inString) {
            if (!this.skipSpace()) return;
            const c = this.buf.charCodeAt(this.pos);
            if (c === 125 && this.firstMember) {
              this.pos++;
              this.mode = "done";
              break;
            }
            if (c !== 34) throw new NotJson("expected a key");
            this.inString = true;
            this.pos++;
          }
          if (!this.scanString()) return;
          this.keyText = this.take(this.pos);
          this.key = JSON.parse(this.keyText) as string;
          this.mode = "colon";
          break;
        }
        case "colon":
          if (!this.skipSpace()) return;
          if (this.buf.charCodeAt(this.pos) !== 58) throw new NotJson("expected a colon");
          this.pos++;
          this.mode = "valueStart";
          break;
        case "valueStart":
          // The value's first character decides how it is read.
          if (!this.skipSpace()) return;
          this.firstMember = false;
          this.depth = 0;
          if (this.key === "users" && this.buf.charCodeAt(this.pos) === 91) {
            this.pos++;
            this.mark = this.pos;
            this.startUsers();
            this.mode = "users";
          } else this.mode = "value";
          break;
        case "value": {
          const stop = this.scan();
          if (stop < 0) return;
          if (stop === 93) throw new NotJson("unbalanced ]");
          const text = this.take(this.pos);
          // A later duplicate wins, as with JSON.parse.
          if (this.key === "users") this.dropUsers();
          this.members.push({ key: this.key, text: `${this.keyText}:${text}` });
          this.mode = "after";
          break;
        }
        case "users": {
          if (this.depth === 0 && !this.inString) {
            // Entries that are flat objects of plain strings are skipped in one native match.
            FLAT_ENTRIES.lastIndex = this.pos;
            if (FLAT_ENTRIES.test(this.buf)) this.pos = FLAT_ENTRIES.lastIndex;
          }
          const stop = this.scan();
          if (stop < 0) return;
          if (stop === 125) throw new NotJson("unbalanced }");
          if (stop === 44) {
            if (this.pendingChars + this.pos - this.mark >= this.batchChars) {
              this.takeUsers(this.take(this.pos), false);
              this.mark = this.pos + 1;
              this.usersCut = true;
            }
            this.pos++;
            break;
          }
          this.takeUsers(this.take(this.pos), true);
          this.pos++;
          this.mode = "after";
          break;
        }
        case "after": {
          if (!this.skipSpace()) return;
          const c = this.buf.charCodeAt(this.pos++);
          if (c === 44) this.mode = "key";
          else if (c === 125) this.mode = "done";
          else throw new NotJson("expected , or }");
          break;
        }
        case "done":
          if (this.skipSpace()) throw new NotJson("text after the object");
          return;
      }
    }
  }

  /** Inside a string: to the character after its closing quote; false when the piece ends first. */
  private scanString(): boolean {
    const buf = this.buf;
    const end = buf.length;
    let q = this.pos;
    if (this.escaped) {
      this.escaped = false;
      q++;
    }
    // A loop over the characters: most strings are ids, shorter than indexOf's set-up is worth.
    for (; q < end; q++) {
      const c = buf.charCodeAt(q);
      if (c === 92) {
        if (++q === end) this.escaped = true;
      } else if (c === 34) {
        this.pos = q + 1;
        this.inString = false;
        return true;
      }
    }
    this.pos = end;
    return false;
  }

  /**
   * Scans to the next `,`, `}` or `]` outside strings and nesting; returns its character code
   * (pos on it), or -1 when the piece ends first (the next one resumes here).
   */
  private scan(): number {
    const buf = this.buf;
    for (;;) {
      if (this.inString && !this.scanString()) return -1;
      if (this.pos >= buf.length) return -1;
      const c = buf.charCodeAt(this.pos);
      if (c === 34) this.inString = true;
      else if (c === 123 || c === 91) this.depth++;
      else if (c === 125 || c === 93) {
        if (this.depth === 0) return c;
        this.depth--;
      } else if (c === 44 && this.depth === 0) return c;
      this.pos++;
    }
  }

  private startUsers(): void {
    this.users = [];
    this.usersError = null;
    this.usersSeen = 0;
    this.usersCut = false;
    this.prevAt = 0;
    for (let k = this.members.length - 1; k >= 0; k--) if (this.members[k]!.key === "users") this.members.splice(k, 1);
  }

  private dropUsers(): void {
    this.users = null;
    this.usersError = null;
  }

  /** One batch of the users array: parsed, each entry checked and kept (the previous config's object when equal). */
  private takeUsers(text: string, last: boolean): void {
    const batch = JSON.parse(`[${text}]`) as unknown[];
    // JSON.parse took "[ ]" for an empty array; between commas that is a missing entry.
    if (batch.length === 0 && (!last || this.usersCut)) throw new NotJson("an empty array entry");
    const users = this.users;
    if (users === null) return;
    const previous = this.previous;
    for (const entry of batch) {
      let v: AgentUser;
      if (isAgentUser(entry)) v = entry;
      else {
        const checked = checkedBySchema(entry, this.usersSeen);
        if ("error" in checked) {
          this.usersError = checked.error;
          // The rest is only checked to be JSON: nothing of it is kept.
          this.users = null;
          return;
        }
        v = checked.user;
      }
      this.usersSeen++;
      // Both lists are in email order (the panel's); out of order, fewer objects are shared.
      while (this.prevAt < previous.length && previous[this.prevAt]!.email < v.email) this.prevAt++;
      const same = previous[this.prevAt];
      if (same !== undefined && same.email === v.email && sameAgentUser(same, v)) {
        users.push(same);
        this.prevAt++;
      } else users.push(v);
    }
  }
}

export interface ReadOptions {
  /** The users of the config the agent holds: an equal user is taken from them. */
  previous?: readonly AgentUser[];
  /** Characters of users per batch (tests make it small). */
  batchChars?: number;
}

/**
 * Reads a config answer's text from its pieces (bytes are UTF-8, as fetch would decode them).
 * Null when the body is not JSON; a valid JSON that is no object comes back as `{ value }`.
 */
export async function readConfigBody(pieces: AsyncIterable<Uint8Array | string>, options: ReadOptions = {}): Promise<ConfigBody | { value: unknown } | null> {
  const parser = new ConfigBodyParser(options.previous ?? [], options.batchChars ?? USERS_BATCH_CHARS);
  const decoder = new TextDecoder();
  // Text before the first non-space character, kept in case the body is not an object after all.
  let head = "";
  let object: boolean | null = null;
  try {
    for await (const piece of pieces) {
      const text = typeof piece === "string" ? piece : decoder.decode(piece, { stream: true });
      if (object === null) {
        head += text;
        const first = head.trimStart();
        if (first === "") continue;
        object = first.startsWith("{");
        if (object) {
          parser.write(head);
          head = "";
        }
      } else if (object) parser.write(text);
      else head += text;
    }
    const tail = decoder.decode();
    if (object === true) {
      parser.write(tail);
      return parser.end();
    }
    // Not an object: small (or broken), parsed whole so the schema can say what it is.
    return { value: JSON.parse(head + tail) as unknown };
  } catch (err) {
    if (err instanceof NotJson || err instanceof SyntaxError) return null;
    throw err;
  }
}

const configWithoutUsers = agentConfigSchema.omit({ users: true });
/** The fields zod checks before `users` (its issues come in the schema's field order). */
const FIELDS_BEFORE_USERS = new Set(Object.keys(agentConfigSchema.shape).slice(0, Object.keys(agentConfigSchema.shape).indexOf("users")));

/**
 * The config agentConfigSchema.safeParse would give for this body, or the error formatZodError
 * would word for it: the same first problem, naming the field. `fields`: the body but its
 * users array (config-stream's `fields`), or the whole body when it has none.
 */
export function checkConfig(fields: unknown, users: UsersRead | undefined): { config: AgentConfig } | { error: string } {
  if (users === undefined) {
    // No users array: the schema says what is wrong (or takes it whole; it is small then).
    const parsed = agentConfigSchema.safeParse(fields);
    return parsed.success ? { config: parsed.data } : { error: formatZodError(parsed.error) };
  }
  const rest = configWithoutUsers.safeParse(fields);
  if (!rest.success) {
    const first = rest.error.issues[0]!;
    const before = typeof first.path[0] === "string" && FIELDS_BEFORE_USERS.has(first.path[0]);
    if (before || !("error" in users)) return { error: formatZodError(rest.error) };
  }
  if ("error" in users) return { error: users.error };
  return { config: { ...rest.data!, users: users.users } as AgentConfig };
}
