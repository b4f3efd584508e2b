import { afterEach, describe, expect, it } from "vitest";
import { parseEnv } from "@/server/env";
import { startTestApp, trpcHttp, type TestApp } from "../http-testing";

/** Finding 11 of issue 11: fleet tooling must not exist in production. */
describe("tooling router (ROUTEBOARD_DEVTOOLS)", () => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it("is off unless ROUTEBOARD_DEVTOOLS is set", () => {
    expect(parseEnv({}).ROUTEBOARD_DEVTOOLS).toBe(false);
    expect(parseEnv({ ROUTEBOARD_DEVTOOLS: "1" }).ROUTEBOARD_DEVTOOLS).toBe(true);
    expect(() => parseEnv({ ROUTEBOARD_DEVTOOLS: "maybe" })).toThrow(/ROUTEBOARD_DEVTOOLS/);
  });

  it("without the variable the procedures do not exist, even for the owner", async () => {
    app = await startTestApp({ devtools: parseEnv({}).ROUTEBOARD_DEVTOOLS });
    const owner = await app.cookie("owner");
    const cluster = await trpcHttp(app, owner, "mutation", "clusters.create", { name: "Prod" });
    const clusterId = (cluster.body.result?.data?.json as { id: string }).id;
    for (const [type, path, input] of [
      ["mutation", "tooling.rotateAgentTokens", { clusterId }],
      ["mutation", "tooling.enrolFleet", { servers: 1 }],
      ["mutation", "tooling.createSynthetic", { name: "S", servers: 1, inboundsPerServer: 1, routes: 1 }],
      ["query", "tooling.assignmentCounts", { clusterId }],
      // the old places are gone too
      ["mutation", "monitoring.rotateAgentTokens", { clusterId }],
      ["mutation", "monitoring.enrolFleet", { servers: 1 }],
      ["mutation", "topology.createSynthetic", { name: "S", servers: 1, inboundsPerServer: 1, routes: 1 }],
      ["query", "monitoring.assignmentCounts", { clusterId }],
    ] as const) {
      const r = await trpcHttp(app, owner, type, path, input);
      expect(r.status, path).toBe(404);
      expect(r.body.error?.json?.data?.code, path).toBe("NOT_FOUND");
    }
  });

  it("with ROUTEBOARD_DEVTOOLS=1 they work, for admins only", async () => {
    app = await startTestApp({ devtools: parseEnv({ ROUTEBOARD_DEVTOOLS: "1" }).ROUTEBOARD_DEVTOOLS });
    const [admin, viewer] = [await app.cookie("admin"), await app.cookie("viewer")];
    const enrol = await trpcHttp(app, admin, "mutation", "tooling.enrolFleet", { clusterName: "Fleet", servers: 2 });
    expect(enrol.status).toBe(200);
    const { clusterId } = enrol.body.result?.data?.json as { clusterId: string };
    expect((await trpcHttp(app, admin, "mutation", "tooling.rotateAgentTokens", { clusterId })).status).toBe(200);
    expect((await trpcHttp(app, admin, "query", "tooling.assignmentCounts", { clusterId })).status).toBe(200);
    expect((await trpcHttp(app, viewer, "mutation", "tooling.rotateAgentTokens", { clusterId })).status).toBe(403);
    expect((await trpcHttp(app, viewer, "mutation", "tooling.createSynthetic", { name: "S", servers: 1, inboundsPerServer: 1, routes: 1 })).status).toBe(403);
    expect((await trpcHttp(app, admin, "mutation", "tooling.createSynthetic", { name: "S", servers: 1, inboundsPerServer: 1, routes: 1 })).status).toBe(200);
  });
});
