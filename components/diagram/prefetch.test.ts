import { describe, expect, it } from "vitest";
import { diagramClusterId } from "./prefetch";

const ID = "8677755b-bfa3-4043-a6ec-06b8376fc299";

describe("diagramClusterId", () => {
  it("finds the cluster of a diagram page, with or without a trailing slash", () => {
    expect(diagramClusterId(`/clusters/${ID}`)).toBe(ID);
    expect(diagramClusterId(`/clusters/${ID}/`)).toBe(ID);
  });

  it("is null for the cluster's other pages, the cluster list and other paths", () => {
    expect(diagramClusterId(`/clusters/${ID}/servers`)).toBeNull();
    expect(diagramClusterId("/clusters")).toBeNull();
    expect(diagramClusterId("/clusters/")).toBeNull();
    expect(diagramClusterId("/team")).toBeNull();
    expect(diagramClusterId(`/x/clusters/${ID}`)).toBeNull();
  });

  it("is null for a path segment that is not an id (the server would refuse it)", () => {
    expect(diagramClusterId("/clusters/not-an-id")).toBeNull();
    expect(diagramClusterId(`/clusters/${ID}x`)).toBeNull();
  });
});
