import { T0, T1, T2, useStateStore } from "./support.js";

const ctx = useStateStore("energy-etl-catalog-");

describe("refresh", () => {
  it("reports ids seen for the first time and keeps first/last seen", () => {
    const { catalog } = ctx.store;
    expect(catalog.refresh("dev-1", "inverter", ["b", "a", "a"], T0)).toEqual(["a", "b"]);
    expect(catalog.refresh("dev-1", "inverter", ["c", "a"], T1)).toEqual(["c"]);
    expect(catalog.refresh("dev-1", "inverter", ["a", "b", "c"], T2)).toEqual([]);
    expect(catalog.refresh("dev-1", "meter", ["a"], T2)).toEqual(["a"]);
    expect(catalog.list("dev-1", "inverter")).toEqual(["a", "b", "c"]);
    expect(catalog.list("dev-2", "inverter")).toEqual([]);

    ctx.store.close();
    const rows = ctx.tmp
      .raw(ctx.path)
      .prepare(
        "SELECT value_id, first_seen, last_seen FROM value_catalog WHERE resource_id = 'inverter' ORDER BY value_id",
      )
      .all();
    expect(rows).toEqual([
      { value_id: "a", first_seen: T0.toISOString(), last_seen: T2.toISOString() },
      { value_id: "b", first_seen: T0.toISOString(), last_seen: T2.toISOString() },
      { value_id: "c", first_seen: T1.toISOString(), last_seen: T2.toISOString() },
    ]);
  });

  it("returns the new ids sorted by code unit", () => {
    expect(ctx.store.catalog.refresh("d", "r", ["e_b", "E_a", "e_a", "10", "9"], T0)).toEqual([
      "10",
      "9",
      "E_a",
      "e_a",
      "e_b",
    ]);
  });

  it("an empty list adds nothing", () => {
    expect(ctx.store.catalog.refresh("d", "r", [], T0)).toEqual([]);
    expect(ctx.store.catalog.list("d", "r")).toEqual([]);
  });

  it.each<[string, string, string, string[]]>([
    ["an empty value id", "dev-1", "inverter", ["a", ""]],
    ["an empty device id", "", "inverter", ["a"]],
    ["an empty resource id", "dev-1", "", ["a"]],
  ])("writes nothing for %s", (_what, deviceId, resourceId, ids) => {
    expect(() => ctx.store.catalog.refresh(deviceId, resourceId, ids, T0)).toThrow(RangeError);
    expect(ctx.store.catalog.list(deviceId, resourceId)).toEqual([]);
    expect(ctx.store.catalog.list("dev-1", "inverter")).toEqual([]);
  });
});

it("the catalog survives close and reopen", () => {
  ctx.store.catalog.refresh("dev-1", "inverter", ["a", "b"], T0);
  const store = ctx.reopen();
  expect(store.catalog.list("dev-1", "inverter")).toEqual(["a", "b"]);
  expect(store.catalog.refresh("dev-1", "inverter", ["b", "c"], T1)).toEqual(["c"]);
});

describe("listed and not listed", () => {
  it("a value no longer listed leaves the list; when it returns it is not new", () => {
    const { catalog } = ctx.store;
    catalog.refresh("dev-1", "inverter", ["a", "b"], T0);
    // the same clock reading twice: what is listed follows the list, not the time
    expect(catalog.refresh("dev-1", "inverter", ["a"], T0)).toEqual([]);
    expect(catalog.list("dev-1", "inverter")).toEqual(["a"]);
    expect(catalog.refresh("dev-1", "inverter", ["a", "b"], T1)).toEqual([]);
    expect(catalog.list("dev-1", "inverter")).toEqual(["a", "b"]);
  });

  it("the device list: new devices are reported, missing ones are no longer listed", () => {
    const { catalog } = ctx.store;
    expect(catalog.devicesReadAt()).toBeUndefined();
    expect(catalog.listedDevices()).toEqual([]);
    expect(catalog.recordDevices(["d1", "d2", "d2"], T0)).toEqual(["d1", "d2"]);
    expect(catalog.devicesReadAt()).toEqual(T0);
    expect(catalog.recordDevices(["d2", "d3"], T1)).toEqual(["d3"]);
    expect(catalog.listedDevices()).toEqual(["d2", "d3"]);
    expect(catalog.devicesReadAt()).toEqual(T1);
    // a device listed again counts as added again
    expect(catalog.recordDevices(["d1", "d2", "d3"], T2)).toEqual(["d1"]);
    expect(catalog.listedDevices()).toEqual(["d1", "d2", "d3"]);
    expect(() => catalog.recordDevices([""], T2)).toThrow(RangeError);
  });

  it("a device's catalog is read back in one piece: listed resources with their listed values", () => {
    const { catalog } = ctx.store;
    catalog.recordDevices(["d1"], T0);
    expect(catalog.device("d1")).toEqual({ resources: [] });
    catalog.recordResources("d1", ["all_data", "meter", "empty"], T0);
    catalog.refresh("d1", "all_data", ["v2", "v1"], T0);
    catalog.refresh("d1", "meter", ["m1"], T0);
    catalog.markRead("d1", T0);
    expect(catalog.device("d1")).toEqual({
      readAt: T0.toISOString(),
      resources: [
        { resourceId: "all_data", values: ["v1", "v2"] },
        { resourceId: "meter", values: ["m1"] },
        { resourceId: "empty", values: [] },
      ],
    });
    // the meter is gone from the device's resources; its values stay in the table, unused
    catalog.recordResources("d1", ["all_data", "empty"], T1);
    expect(catalog.device("d1").resources.map((r) => r.resourceId)).toEqual(["all_data", "empty"]);
    expect(catalog.device("unknown")).toEqual({ resources: [] });
  });

  it("a catalog kept between reads is read again once another process changed it; devices share equal lists", () => {
    const { catalog } = ctx.store;
    const record = (store: typeof catalog, deviceId: string, values: string[], at: Date) => {
      store.recordResources(deviceId, ["all_data"], at);
      store.refresh(deviceId, "all_data", values, at);
      store.markRead(deviceId, at);
    };
    record(catalog, "d1", ["v1", "v2"], T0);
    record(catalog, "d2", ["v2", "v1"], T0);
    const first = catalog.device("d1");
    expect(catalog.device("d1")).toBe(first);
    const [d1, d2] = [first, catalog.device("d2")].map((c) => c.resources[0]?.values);
    expect(d1).toEqual(["v1", "v2"]);
    expect(d2).toBe(d1);
    expect(Object.isFrozen(d1)).toBe(true);
    // another process (its own connection) reads the device's catalog again
    const other = ctx.tmp.open(ctx.path);
    try {
      record(other.catalog, "d1", ["v1", "v2", "v3"], T1);
    } finally {
      other.close();
    }
    expect(catalog.device("d1")).toEqual({
      readAt: T1.toISOString(),
      resources: [{ resourceId: "all_data", values: ["v1", "v2", "v3"] }],
    });
    expect(catalog.device("d2").resources[0]?.values).toEqual(["v1", "v2"]);
    // a device the API no longer knows has no catalog kept
    catalog.unlistDevice("d2");
    expect(catalog.device("d2").readAt).toBeUndefined();
  });

  it("due: never read, listed again after the API dropped it, or read at or before the given time; oldest first", () => {
    const { catalog } = ctx.store;
    catalog.recordDevices(["fresh", "old", "never", "stale", "gone"], T0);
    catalog.markRead("fresh", T2);
    catalog.markRead("old", T0);
    catalog.markRead("stale", T2);
    // the API stopped listing it, then lists it again: its catalog is read again
    catalog.unlistDevice("stale");
    catalog.recordDevices(["fresh", "old", "never", "stale", "gone"], T2);
    catalog.markRead("gone", T0);
    catalog.unlistDevice("gone");
    expect(catalog.due(T1)).toEqual(["never", "stale", "old"]);
    expect(catalog.due(T2)).toEqual(["never", "stale", "old", "fresh"]);
    expect(catalog.listedDevices()).not.toContain("gone");
  });
});
