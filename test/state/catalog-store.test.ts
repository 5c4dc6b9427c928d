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
