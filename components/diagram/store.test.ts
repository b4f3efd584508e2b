import { describe, expect, it } from "vitest";
import {
  createDiagramStore,
  selectIsCarried,
  selectIsCarryTarget,
  selectIsHighlighted,
  selectIsRouteHighlighted,
  type DiagramShared,
  type DiagramState,
  type DiagramStore,
} from "./store";

const shared: DiagramShared = {
  clusterId: "c1",
  canEdit: true,
  targets: [null, "r1", "r2", "r3"].map((target) => ({ target, name: target ?? "Unassigned" })),
  actions: { move() {}, moveRoute() {}, startCarry() {} },
};

/** What each node's selector answers, and which answers an update changed: exactly the
 * nodes React would re-render (useStore re-renders when the selection is not Object.is). */
function watch(store: DiagramStore, selectors: Record<string, (s: DiagramState) => unknown>) {
  const last = new Map(Object.entries(selectors).map(([id, sel]) => [id, sel(store.getState())]));
  const changed = new Set<string>();
  store.subscribe((s) => {
    for (const [id, sel] of Object.entries(selectors)) {
      const v = sel(s);
      if (!Object.is(v, last.get(id))) changed.add(id);
      last.set(id, v);
    }
  });
  return { changed, value: (id: string) => last.get(id) };
}

function nodeSelectors() {
  return {
    "chip:a": selectIsCarried("a"),
    "chip:b": selectIsCarried("b"),
    "hl:a": selectIsHighlighted("a"),
    "hl:b": selectIsHighlighted("b"),
    unassigned: selectIsCarryTarget(null),
    "route:r1": selectIsCarryTarget("r1"),
    "route:r2": selectIsCarryTarget("r2"),
    "route:r3": selectIsCarryTarget("r3"),
    "flash:r1": selectIsRouteHighlighted("r1"),
    "flash:r2": selectIsRouteHighlighted("r2"),
  };
}

describe("diagram store", () => {
  it("starts with nothing carried or highlighted", () => {
    expect(createDiagramStore(shared).getState()).toEqual({ ...shared, carry: null, highlight: null, focusRoute: null, highlightRoute: null });
  });

  it("a highlighted route is the only one whose selector says so", () => {
    const store = createDiagramStore(shared);
    store.setState({ highlightRoute: "r1" });
    expect(selectIsRouteHighlighted("r1")(store.getState())).toBe(true);
    expect(selectIsRouteHighlighted("r2")(store.getState())).toBe(false);
  });

  it("picking up touches only the carried chip and the target it is over", () => {
    const store = createDiagramStore(shared);
    const w = watch(store, nodeSelectors());
    store.setState({ carry: { inboundId: "a", index: 1 } });
    expect([...w.changed].sort()).toEqual(["chip:a", "route:r1"]);
    expect(w.value("chip:a")).toBe(true);
    expect(w.value("route:r1")).toBe(true);
  });

  it("an arrow key touches only the target left and the target entered", () => {
    const store = createDiagramStore(shared);
    store.setState({ carry: { inboundId: "a", index: 1 } });
    const w = watch(store, nodeSelectors());
    store.setState({ carry: { inboundId: "a", index: 2 } });
    expect([...w.changed].sort()).toEqual(["route:r1", "route:r2"]);
    w.changed.clear();
    store.setState({ carry: { inboundId: "a", index: 0 } });
    expect([...w.changed].sort()).toEqual(["route:r2", "unassigned"]);
  });

  it("dropping touches only the chip and the last target", () => {
    const store = createDiagramStore(shared);
    store.setState({ carry: { inboundId: "b", index: 3 } });
    const w = watch(store, nodeSelectors());
    store.setState({ carry: null });
    expect([...w.changed].sort()).toEqual(["chip:b", "route:r3"]);
  });

  it("a highlight touches only the chips highlighted before and after", () => {
    const store = createDiagramStore(shared);
    const w = watch(store, nodeSelectors());
    store.setState({ highlight: "a" });
    expect([...w.changed]).toEqual(["hl:a"]);
    w.changed.clear();
    store.setState({ highlight: "b" });
    expect([...w.changed].sort()).toEqual(["hl:a", "hl:b"]);
  });

  it("a route's flash touches only the routes flashed before and after, and no chip", () => {
    const store = createDiagramStore(shared);
    const w = watch(store, nodeSelectors());
    store.setState({ highlightRoute: "r1" });
    expect([...w.changed]).toEqual(["flash:r1"]);
    w.changed.clear();
    store.setState({ highlightRoute: "r2" });
    expect([...w.changed].sort()).toEqual(["flash:r1", "flash:r2"]);
  });

  it("new targets after a refetch touch only the targets whose answer changed", () => {
    const store = createDiagramStore(shared);
    store.setState({ carry: { inboundId: "a", index: 2 } });
    const w = watch(store, nodeSelectors());
    // The same targets, new objects (a refetch): nothing changes.
    store.setState({ targets: shared.targets.map((t) => ({ ...t })) });
    expect([...w.changed]).toEqual([]);
    // r1 moved below r2: the carry's index now points at r1.
    store.setState({ targets: [shared.targets[0]!, shared.targets[2]!, shared.targets[1]!, shared.targets[3]!] });
    expect([...w.changed].sort()).toEqual(["route:r1", "route:r2"]);
  });

  it("an index past the targets (a route deleted meanwhile) is over nothing", () => {
    const store = createDiagramStore(shared);
    store.setState({ carry: { inboundId: "a", index: 9 } });
    expect(selectIsCarryTarget("r3")(store.getState())).toBe(false);
    expect(selectIsCarryTarget(null)(store.getState())).toBe(false);
  });
});
