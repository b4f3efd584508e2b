/** Counters: one series per label set, whatever order the labels are written in. */
import { describe, expect, it } from "vitest";
import { counter, renderMetrics } from "./metrics";

describe("metrics counters", () => {
  it("adds to one series per label set, labels in any order, and renders each once", () => {
    const c = counter("routeboard_test_label_order_total", "test");
    c.inc({ kind: "delta", encoding: "gzip" });
    c.inc({ encoding: "gzip", kind: "delta" }, 2);
    c.inc({ encoding: "br", kind: "delta" });
    c.inc();
    c.inc({}, 4);
    const lines = renderMetrics().split("\n").filter((l) => l.startsWith("routeboard_test_label_order_total"));
    expect(lines).toEqual(['routeboard_test_label_order_total{kind="delta",encoding="gzip"} 3', 'routeboard_test_label_order_total{encoding="br",kind="delta"} 1', "routeboard_test_label_order_total 5"]);
  });
});
