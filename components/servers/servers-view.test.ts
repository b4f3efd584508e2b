import { describe, expect, it } from "vitest";
import { capacityText, deletedServerNotice, fallbackNotice, fleetSummary, inboundCreatedNotice, plural } from "./servers-view";

describe("plural", () => {
  it("uses the singular for exactly one and the plural otherwise, zero included", () => {
    expect(plural(1, "inbound")).toBe("1 inbound");
    expect(plural(0, "inbound")).toBe("0 inbounds");
    expect(plural(2, "server")).toBe("2 servers");
  });
});

describe("fleetSummary", () => {
  it("counts servers and the inbounds of all of them", () => {
    expect(fleetSummary([{ inbounds: [1, 2] }, { inbounds: [] }, { inbounds: [3] }])).toBe("3 servers · 3 inbounds");
  });
  it("says one server and one inbound in the singular", () => {
    expect(fleetSummary([{ inbounds: [1] }])).toBe("1 server · 1 inbound");
  });
  it("handles an empty cluster", () => {
    expect(fleetSummary([])).toBe("0 servers · 0 inbounds");
  });
});

describe("capacityText", () => {
  it("shows a configured capacity with thousands separators", () => {
    expect(capacityText(10000)).toBe(" · 10,000 Mbit/s");
  });
  it("says the capacity is learned when none is set (null, undefined or 0)", () => {
    expect(capacityText(null)).toBe(" · capacity learned");
    expect(capacityText(undefined)).toBe(" · capacity learned");
    expect(capacityText(0)).toBe(" · capacity learned");
  });
});

describe("deletedServerNotice", () => {
  it("names how many inbounds went with the server", () => {
    expect(deletedServerNotice(1)).toBe("Server deleted with its 1 inbound.");
    expect(deletedServerNotice(3)).toBe("Server deleted with its 3 inbounds.");
  });
  it("is plain when the server had none", () => {
    expect(deletedServerNotice(0)).toBe("Server deleted.");
  });
});

describe("fallbackNotice", () => {
  it("says whether the inbound became or stopped being the fallback", () => {
    expect(fallbackNotice({ name: "de-1", isFallback: true })).toBe("de-1 is now its route's fallback.");
    expect(fallbackNotice({ name: "de-1", isFallback: false })).toBe("de-1 is no longer a fallback.");
  });
});

describe("inboundCreatedNotice", () => {
  it("names the chosen route first, even when a default route was also made", () => {
    expect(inboundCreatedNotice("Default", "🇩🇪 Germany")).toBe("Inbound created in route “🇩🇪 Germany”.");
  });
  it("names the first route made for the cluster's first inbound", () => {
    expect(inboundCreatedNotice("Default", null)).toBe("Inbound created. As the cluster's first inbound, it was put in a new route “Default”.");
  });
  it("says the inbound is unassigned when it went nowhere", () => {
    expect(inboundCreatedNotice(null, null)).toBe("Inbound created. It is unassigned until you put it in a route.");
  });
});
