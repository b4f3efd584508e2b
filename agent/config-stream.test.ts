import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { agentConfigSchema, agentUserSchema, type AgentConfig } from "../core/agent-wire";
import { formatZodError } from "../core/zod-format";
import { checkConfig, isAgentUser, readConfigBody } from "./config-stream";
import { agentConfig, IDS, inbound } from "./test-support";

/** The text in pieces of `size` bytes (as UTF-8, so multi-byte characters are cut too). */
async function* pieces(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text, "utf8");
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** What the agent made of a body before: JSON.parse, then agentConfigSchema. */
function reference(text: string): { config: AgentConfig } | { error: string } | "not JSON" {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return "not JSON";
  }
  const parsed = agentConfigSchema.safeParse(body);
  return parsed.success ? { config: parsed.data } : { error: formatZodError(parsed.error) };
}

/** What the agent makes of it now, read in pieces of `size` bytes with batches of `batchChars`. */
async function streamed(text: string, size: number, batchChars = 200, previous: AgentConfig["users"] = []): Promise<ReturnType<typeof reference>> {
  const body = await readConfigBody(pieces(text, size), { batchChars, previous });
  if (body === null) return "not JSON";
  if ("value" in body) {
    const parsed = agentConfigSchema.safeParse(body.value);
    return parsed.success ? { config: parsed.data } : { error: formatZodError(parsed.error) };
  }
  return checkConfig(body.fields, body.users);
}

const users = (n: number) => Array.from({ length: n }, (_, k) => ({ id: randomUUID() as string, email: `sub-${String(k).padStart(6, "0")}` }));
const base = agentConfig({ inbounds: [inbound({ id: IDS.inNone, port: 8080, security: "none", name: 'a "quoted" name, with {braces} [and] \\ backslashes ✓' })], users: users(40) });
const text = JSON.stringify(base);

describe("readConfigBody + checkConfig", () => {
  it("gives the schema's config whatever the pieces and batches, with strings holding quotes, escapes, brackets and multi-byte characters", async () => {
    expect(reference(text)).toEqual({ config: base });
    for (const size of [1, 2, 3, 7, 64, 1000, 1 << 20]) expect(await streamed(text, size)).toEqual({ config: base });
    const pretty = JSON.stringify({ ...base, users: [...base.users, { id: IDS.alice, email: 'e"\\,]}😀' }] }, null, 2);
    expect(await streamed(pretty, 5, 50)).toEqual(reference(pretty));
    expect(await streamed(JSON.stringify({ ...base, users: [] }), 3)).toEqual({ config: { ...base, users: [] } });
  });

  it("shares the previous config's user objects where email and id are unchanged", async () => {
    const previous = base.users;
    const changed = { ...base, users: [...previous.slice(1, 20), { ...previous[20]!, id: randomUUID() }, ...previous.slice(21), { id: randomUUID(), email: "sub-zzz" }] };
    const got = await streamed(JSON.stringify(changed), 100, 200, previous);
    if (typeof got === "string" || !("config" in got)) throw new Error(JSON.stringify(got));
    expect(got.config).toEqual(changed);
    expect(got.config.users[0]).toBe(previous[1]);
    expect(got.config.users[18]).toBe(previous[19]);
    expect(got.config.users[19]).not.toBe(previous[20]);
    expect(got.config.users[20]).toBe(previous[21]);
  });

  it("rejects what JSON.parse rejects, and otherwise gives the schema's first error, naming the field", async () => {
    const u = JSON.stringify(base.users.slice(0, 3)).slice(1, -1);
    const rest = JSON.stringify({ ...base, users: undefined }).slice(1, -1);
    const bodies = [
      // not JSON
      "",
      "   ",
      `{${rest},"users":[${u},]}`,
      `{${rest},"users":[,${u}]}`,
      `{${rest},"users":[${u},,${u}]}`,
      `{${rest},"users":[${u}}`,
      `{${rest},"users":[${u}]]}`,
      `{${rest},"users":[${u}]`,
      `{${rest},"users":[${u}]} x`,
      `{${rest},"users":[${u}]}}`,
      `{${rest},"users":[${u}],}`,
      `{${rest} "users":[${u}]}`,
      `{${rest},"users" [${u}]}`,
      `{${rest},"users":[${u}] "x":1}`,
      `{${rest},"users":[{"id":"${IDS.alice}","email":"a\\"}]}`,
      `{${rest},"users":[{"id":"${IDS.alice}","email":"a\\q"}]}`,
      `{${rest},users:[${u}]}`,
      `{${rest},"users":[${u}],"neighbours":[}`,
      `{,${rest},"users":[${u}]}`,
      `{"users":[${u}`,
      `{"users`,
      // JSON, but no valid config
      "[]",
      "null",
      '"config"',
      "{}",
      `{${rest}}`,
      `{${rest},"users":null}`,
      `{${rest},"users":{}}`,
      `{${rest},"users":[${u},5]}`,
      `{${rest},"users":[${u},null]}`,
      `{${rest},"users":[${u},[]]}`,
      `{${rest},"users":[${u},{"id":"x","email":"e"}]}`,
      `{${rest},"users":[${u},{"id":"${IDS.alice}","email":""}]}`,
      `{${rest},"users":[${u},{"id":"${IDS.alice}","email":"${"e".repeat(129)}"}]}`,
      `{${rest},"users":[${u},{"id":"${IDS.alice}","email":"e","level":0}]}`,
      `{${rest},"users":[${u},{"email":"e"}]}`,
      `{${rest},"users":[${u},{"id":"${IDS.alice}"}]}`,
      `{${rest},"users":[${u},{"id":5,"email":"e"}]}`,
      `{${rest},"users":[${u},{"id":"${IDS.alice}","email":["e"]}]}`,
      `{${rest},"users":[{"id":"x","email":"e"},{"id":"y","email":"e"}]}`,
      // the first problem in the schema's field order, users or not
      `{${rest.replace(`"version":"${base.version}"`, '"version":5')},"users":[{"id":"x","email":"e"}]}`,
      `{${rest.replace('"reportIntervalS":60', '"reportIntervalS":0')},"users":[{"id":"x","email":"e"}]}`,
      `{${rest.replace('"neighbours":[]', '"neighbours":5')},"users":[{"id":"x","email":"e"}]}`,
      `{${rest.replace('"neighbours":[]', '"neighbours":5')},"users":[${u}]}`,
      `{${rest},"extra":1,"users":[{"id":"x","email":"e"}]}`,
      `{${rest},"extra":1,"users":[${u}]}`,
      `{${rest},"allowedPrivateDestinations":["localhost:80"],"users":[${u}]}`,
      // a later duplicate key wins, as with JSON.parse
      `{${rest},"users":[{"id":"x","email":"e"}],"users":[${u}]}`,
      `{${rest},"users":[${u}],"users":null}`,
      `{${rest},"users":null,"users":[${u}]}`,
    ];
    for (const body of bodies) {
      const want = reference(body);
      for (const size of [1, 4, 4096]) expect({ body, got: await streamed(body, size, 30) }).toEqual({ body, got: want });
    }
    // The user errors name the entry and its field.
    expect(await streamed(`{${rest},"users":[${u},{"id":"x","email":"e"}]}`, 64)).toEqual({ error: "users[3].id: expected a UUID" });
    expect(await streamed(`{${rest},"users":[${u},{"id":"${IDS.alice}","email":"e","level":0}]}`, 64)).toEqual({ error: "users[3].level: unknown field" });
  });
});

describe("isAgentUser", () => {
  it("accepts exactly what agentUserSchema accepts", () => {
    // It checks these fields by hand: a field added to the schema must be added there too.
    expect(Object.keys(agentUserSchema.shape)).toEqual(["id", "email", "password", "plan"]);
    const values: unknown[] = [
      { id: IDS.alice, email: "a" },
      { email: "a", id: IDS.alice },
      { id: IDS.alice.toUpperCase(), email: "a" },
      { id: "00000000-0000-0000-0000-000000000000", email: "a" },
      { id: "ffffffff-ffff-ffff-ffff-ffffffffffff", email: "a" },
      { id: "00000000-0000-0000-0000-000000000001", email: "a" },
      { id: "6ba7b810-9dad-01d1-80b4-00c04fd430c8", email: "a" },
      { id: "6ba7b810-9dad-91d1-80b4-00c04fd430c8", email: "a" },
      { id: "6ba7b810-9dad-11d1-c0b4-00c04fd430c8", email: "a" },
      { id: ` ${IDS.alice}`, email: "a" },
      { id: `${IDS.alice}\n`, email: "a" },
      { id: IDS.alice, email: "e".repeat(128) },
      { id: IDS.alice, email: "e".repeat(129) },
      { id: IDS.alice, email: "😀".repeat(64) },
      { id: IDS.alice, email: "😀".repeat(65) },
      { id: IDS.alice, email: "" },
      { id: IDS.alice, email: 1 },
      { id: IDS.alice, email: null },
      { id: IDS.alice },
      { id: IDS.alice, email: "a", flow: "" },
      { id: IDS.alice, email: "a", plan: "p" },
      { id: IDS.alice, email: "a", plan: "p".repeat(64) },
      { id: IDS.alice, email: "a", password: "s3cret" },
      { id: IDS.alice, email: "a", password: "s".repeat(128), plan: "p" },
      { id: IDS.alice, email: "a", password: "s".repeat(129) },
      { id: IDS.alice, email: "a", password: "" },
      { id: IDS.alice, email: "a", password: 7 },
      { id: IDS.alice, email: "a", password: "😀".repeat(64) },
      { id: IDS.alice, email: "a", password: "😀".repeat(65) },
      { id: IDS.alice, email: "a", password: undefined },
      { id: IDS.alice, email: "a", plan: "p".repeat(65) },
      { id: IDS.alice, email: "a", plan: "" },
      { id: IDS.alice, email: "a", plan: 1 },
      { id: IDS.alice, email: "a", plan: "p", flow: "" },
      { id: IDS.alice, email: "a", id2: undefined },
      JSON.parse(`{"id":"${IDS.alice}","email":"a","__proto__":{}}`),
      null,
      [],
      "a",
      5,
    ];
    for (const v of values) expect({ v, ok: isAgentUser(v) }).toEqual({ v, ok: agentUserSchema.safeParse(v).success });
  });
});
