import { emptyCounters } from "../../src/pipeline/run-context.js";
import { runReportLines } from "../../src/pipeline/run-report.js";
import type { Cursor } from "../../src/state/types.js";

const END_S = 1_800_000_000;

const cursor = (failures: number, lastError?: string): Cursor => ({
  deviceId: "site A+1",
  resourceId: "all_data",
  newestRecordS: END_S - 120,
  fetchedUntilS: END_S - 60,
  startedS: END_S - 86_400,
  failures,
  ...(lastError === undefined ? {} : { lastError }),
  updatedAt: new Date(END_S * 1000).toISOString(),
});

const lagLine = (c: Cursor) =>
  runReportLines(
    { kind: "sync", counters: emptyCounters() },
    { status: "ok", devices: 1, requests: 1, points: 1, errors: 0, detail: null },
    1,
    END_S,
    [{ cursor: c, deadLetters: 0 }],
    { silentAfterS: 3600 },
  )[1];

describe("the run's report (etl_lag)", () => {
  it("carries the last error of a failing resource on one line, quoted for line protocol", () => {
    const line = lagLine(cursor(2, 'GET /data failed\n(HTTP 500): "boom" \\ again'));
    expect(line).toBe(
      `etl_lag,device_id=site\\ A+1,resource_id=all_data lag_s=120,fetched_lag_s=60,silent=0,failures=2,dead_letters=0,last_error="GET /data failed (HTTP 500): \\"boom\\" \\\\ again" ${END_S}`,
    );
  });

  it("writes an empty last error once the resource recovered, so last() shows no stale error", () => {
    expect(lagLine(cursor(0, "an old error"))).toContain(',last_error="" ');
  });
});
