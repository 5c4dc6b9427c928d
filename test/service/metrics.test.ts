import { describe, expect, it } from "@jest/globals";
import { refusedWhole } from "../../src/influx/write-errors.js";
import { EtlMetrics } from "../../src/service/metrics.js";

describe("EtlMetrics", () => {
  it("counts what a chunk dropped by kind, each series shown from the start", async () => {
    const metrics = new EtlMetrics();
    const dropped = async (): Promise<string[]> =>
      (await metrics.registry.metrics())
        .split("\n")
        .filter((line) => line.startsWith("energy_etl_dropped_total{"));
    expect(await dropped()).toEqual([
      'energy_etl_dropped_total{what="members"} 0',
      'energy_etl_dropped_total{what="rows_outside_window"} 0',
      'energy_etl_dropped_total{what="duplicate_rows"} 0',
    ]);
    const chunk = {
      records: 10,
      points: 10,
      requests: 1,
      serverTimeS: 0,
      deadLetters: 0,
      newDeadLetters: 0,
      resolvedDeadLetters: 0,
      extraMemberNames: ["x"],
    };
    metrics.chunkDone(0.1, {
      ...chunk,
      dropped: { extraMembers: 2, outOfWindow: 0, duplicates: 1 },
    });
    metrics.chunkDone(0.1, {
      ...chunk,
      dropped: { extraMembers: 0, outOfWindow: 3, duplicates: 0 },
    });
    expect(await dropped()).toEqual([
      'energy_etl_dropped_total{what="members"} 2',
      'energy_etl_dropped_total{what="rows_outside_window"} 3',
      'energy_etl_dropped_total{what="duplicate_rows"} 1',
    ]);
  });

  it("counts writes InfluxDB refused as a whole under code refused, the series shown from the start", async () => {
    const metrics = new EtlMetrics();
    const refused = async (): Promise<string[]> =>
      (await metrics.registry.metrics())
        .split("\n")
        .filter((line) => line.startsWith('energy_etl_write_errors_total{code="refused"}'));
    expect(await refused()).toEqual(['energy_etl_write_errors_total{code="refused"} 0']);
    const error = refusedWhole(
      { status: 413, message: "too large" },
      1,
      "a single line is too large",
    );
    metrics.chunkFailed(error);
    metrics.chunkFailed(error);
    expect(await refused()).toEqual(['energy_etl_write_errors_total{code="refused"} 2']);
  });
});
