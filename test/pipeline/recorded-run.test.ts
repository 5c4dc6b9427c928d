/**
 * The one run envelope (src/pipeline/recorded-run.ts) with a real SQLite state file: the run's
 * status from its tally, its row ended only after its report is written, a fatal error recorded
 * and thrown on, a shutdown recorded as interrupted.
 */
import { loadConfig } from "../../src/config.js";
import type { WriteOutcome } from "../../src/influx/point-sink.js";
import { InfluxWriteError } from "../../src/influx/write-errors.js";
import { type RecordedRunParts, recordedRun } from "../../src/pipeline/recorded-run.js";
import { processOwner } from "../../src/state/owner.js";
import { StateStore } from "../../src/state/state-store.js";
import { type LineBatch, linesOf } from "../../src/transform/line-protocol.js";
import { captureLogger } from "../support/log-capture.js";
import { tempStateDb } from "../support/pipeline.js";

const NOW = new Date(Date.UTC(2026, 5, 15, 12));

/** A sink that keeps what it is given, and notes whether the run had ended when it was. */
class RecordingSink {
  readonly lines: string[] = [];
  runEndedAtWrite: (string | null | undefined)[] = [];
  constructor(private readonly store: StateStore) {}
  async write(batch: LineBatch): Promise<WriteOutcome> {
    this.runEndedAtWrite.push(this.store.runs.last("sync")?.endedAt);
    this.lines.push(...linesOf(batch));
    return { written: batch.lines, rejected: [] };
  }
}

describe("recordedRun: the envelope of every run", () => {
  let store: StateStore;
  let sink: RecordingSink;
  let stopping: boolean;
  let parts: RecordedRunParts;

  beforeEach(() => {
    store = StateStore.open(tempStateDb());
    sink = new RecordingSink(store);
    stopping = false;
    parts = {
      store,
      sink,
      config: loadConfig({}),
      apiNow: () => NOW,
      logger: captureLogger().logger,
      owner: processOwner("test"),
      now: () => NOW,
      get isStopping() {
        return stopping;
      },
    };
  });
  afterEach(() => store.close());

  const tally = (parts: number, failed: number) => () => ({
    parts,
    failures: Array.from({ length: failed }, (_, i) => ({
      part: { device: `d${i}` },
      error: `e${i}`,
    })),
    devices: parts,
  });

  it.each([
    ["ok", 3, 0],
    ["partial", 3, 1],
    ["failed", 3, 3],
  ])(
    "%s when %i parts ran and %i failed; the row ends after the report",
    async (status, n, failed) => {
      const recorded = await recordedRun(
        parts,
        "sync",
        async (run) => {
          run.counters.requests += 7;
          run.counters.points += 40;
        },
        tally(n, failed),
      );
      expect(recorded.status).toBe(status);
      expect(recorded.errors).toBe(failed);
      const row = store.runs.last("sync");
      expect(row).toMatchObject({ status, devices: n, requests: 7, points: 40, errors: failed });
      expect(row?.detail ?? null).toBe(
        failed === 0
          ? null
          : JSON.stringify(
              Array.from({ length: failed }, (_, i) => ({ device: `d${i}`, error: `e${i}` })),
            ),
      );
      // the report was written while the run was still running
      expect(sink.runEndedAtWrite).toEqual([null]);
      expect(sink.lines[0]).toMatch(
        new RegExp(`^etl_run,kind=sync,status=${status} requests=7,points=40,errors=${failed},`),
      );
    },
  );

  it("a fatal error: recorded as failed (no report: InfluxDB is what failed), then thrown on", async () => {
    const fatal = new InfluxWriteError("InfluxDB refused the token", "auth_failed", 401);
    await expect(
      recordedRun(parts, "backfill", async () => Promise.reject(fatal), tally(2, 0)),
    ).rejects.toBe(fatal);
    expect(store.runs.last("backfill")).toMatchObject({
      status: "failed",
      errors: 1,
      detail: JSON.stringify([{ device: "*", error: "InfluxDB refused the token" }]),
    });
    expect(sink.lines).toEqual([]);
  });

  it("work cut short by our own shutdown is interrupted, not failed", async () => {
    const recorded = await recordedRun(
      parts,
      "catalog",
      async () => {
        stopping = true;
        throw new Error("aborted: shutting down");
      },
      tally(1, 0),
    );
    expect(recorded.status).toBe("interrupted");
    expect(store.runs.last("catalog")).toMatchObject({ status: "interrupted", errors: 0 });
  });
});
