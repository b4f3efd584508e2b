/** How a report's unservedInbounds and listenersDown become the server's inbounds not served (issue 25). */
import { describe, expect, it } from "vitest";
import { notServed } from "./reports";

const reality = { inboundId: "00000000-0000-4000-8000-000000000001", reason: "Reality needs Xray-core" };
const tlsDown = { inboundId: "00000000-0000-4000-8000-000000000002", port: 8443, error: "ECONNREFUSED" };
const tlsRow = { inboundId: tlsDown.inboundId, reason: "port 8443 does not accept connections (ECONNREFUSED)", listener: true as const };

describe("notServed", () => {
  it("joins what the config leaves out and the listeners that are down, the latter marked", () => {
    expect(notServed([], { unservedInbounds: [reality], listenersDown: [tlsDown] })).toEqual([reality, tlsRow]);
  });

  it("a field the report leaves out keeps its stored rows (an older agent never sends listenersDown)", () => {
    const stored = [reality, tlsRow];
    expect(notServed(stored, { unservedInbounds: [] })).toEqual([tlsRow]);
    expect(notServed(stored, { listenersDown: [] })).toEqual([reality]);
    expect(notServed([reality], { unservedInbounds: [reality] })).toEqual([reality]);
  });

  it("an inbound both left out and down is listed once, with the config's reason", () => {
    expect(notServed([], { unservedInbounds: [{ ...reality, inboundId: tlsDown.inboundId }], listenersDown: [tlsDown] })).toEqual([{ ...reality, inboundId: tlsDown.inboundId }]);
  });
});
