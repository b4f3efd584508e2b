import { describe, expect, it } from "vitest";
import { navLinks, shellRedirect } from "./nav";

describe("navLinks", () => {
  it("gives an owner every page, in header order", () => {
    expect(navLinks("owner").map((l) => l.label)).toEqual(["Clusters", "Alerts", "Team", "API tokens"]);
  });
  it("gives an admin everything but the team", () => {
    expect(navLinks("admin").map((l) => l.href)).toEqual(["/clusters", "/alerts", "/tokens"]);
  });
  it("gives a viewer the clusters only", () => {
    expect(navLinks("viewer")).toEqual([{ href: "/clusters", label: "Clusters" }]);
  });
});

describe("shellRedirect", () => {
  it("waits while the status is unknown", () => {
    expect(shellRedirect(undefined, "/clusters")).toBeNull();
  });
  it("sends to setup before the first operator exists, even without a session", () => {
    expect(shellRedirect({ needsSetup: true, operator: null }, "/clusters")).toBe("/setup");
  });
  it("sends to login without a session, coming back to the page and its query", () => {
    expect(shellRedirect({ needsSetup: false, operator: null }, "/clusters/c1/subscribers?q=a b&sort=x")).toBe(
      "/login?next=%2Fclusters%2Fc1%2Fsubscribers%3Fq%3Da%20b%26sort%3Dx",
    );
  });
  it("stays with a session", () => {
    expect(shellRedirect({ needsSetup: false, operator: { username: "a", role: "admin" } }, "/clusters")).toBeNull();
  });
});
