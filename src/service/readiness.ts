import type { ApiClient } from "../api/api-client.js";
import type { PointSink } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import { type SyncRules, silentSince } from "../pipeline/cursor.js";
import type { StateStore } from "../state/state-store.js";
import { messageOf } from "../util/errors.js";
import { sleep } from "../util/timers.js";
import { epochSeconds } from "../util/utc-time.js";
import type { HealthHandler } from "./health-server.js";
import type { CheckOutcome, Scheduler } from "./scheduler.js";

/** What /readyz holds against. */
export interface ReadinessRules {
  /** Not ready when a resource that is not silent lags more than this (READY_MAX_LAG). */
  readonly maxLagS: number;
  /** Not ready after this many failed syncs in a row (READY_FAILED_SYNCS). */
  readonly failedSyncs: number;
  /** InfluxDB and the API are asked at most this often; answers are cached between. */
  readonly checkIntervalMs: number;
}

export interface ReadinessParts {
  readonly rules: ReadinessRules;
  /** True once the service stops: /readyz then says so and asks nothing. */
  readonly stopping: () => boolean;
  /** Asked whether it takes writes (a sink without `check`, a file, claims no InfluxDB check). */
  readonly sink: Pick<PointSink, "check">;
  readonly client: Pick<ApiClient, "accessToken">;
  readonly scheduler: Pick<Scheduler, "state">;
  /** The recent syncs, the cursors, and the state file. */
  readonly store: Pick<StateStore, "runs" | "cursors" | "checkFile">;
  /** Now as the API sees it (what lag is counted against). */
  readonly apiNow: () => Date;
  /** When a resource counts as silent, resolved at `nowS` (SILENT_AFTER). */
  readonly silenceAt: (nowS: number) => Pick<SyncRules, "silentAfterS">;
  /** Epoch ms, for the checks' cache and the scheduler's state (the real clock). */
  readonly nowMs: () => number;
}

/** How long /readyz waits for each check. */
const CHECK_TIMEOUT_MS = 5000;

interface CachedCheck {
  at: number;
  outcome: CheckOutcome;
  pending?: Promise<CheckOutcome>;
}

/** /readyz: InfluxDB and the API answer, ticks on time, syncs not all failed, lag, the file. */
export class Readiness {
  private readonly checks = new Map<string, CachedCheck>();

  constructor(private readonly parts: ReadinessParts) {}

  /** Each check's outcome, by name ("ok" or why not); only `service` while stopping. */
  async check(): Promise<Record<string, CheckOutcome>> {
    const { stopping, sink, client, scheduler, nowMs } = this.parts;
    if (stopping()) return { service: "stopping" };
    const check = sink.check?.bind(sink);
    const [influxdb, api] = await Promise.all([
      // a file sink has nothing to ask: no InfluxDB check is claimed for it
      check ? this.cached("influxdb", () => check()) : undefined,
      this.cached("api", () => client.accessToken()),
    ]);
    return {
      ...(influxdb === undefined ? {} : { influxdb }),
      api,
      scheduler: scheduler.state(nowMs()),
      syncs: this.recentSyncs(),
      lag: this.lagCheck(),
      state: this.stateCheck(),
    };
  }

  /** The /readyz route: 200 when every check is ok, else 503 with the reasons. */
  readonly route: HealthHandler = async () => {
    const checks = await this.check();
    const failed = Object.entries(checks).filter(([, outcome]) => outcome !== "ok");
    const reason = failed.map(([name, why]) => `${name}: ${why}`).join("; ");
    const body = failed.length
      ? { status: "not ready", reason, checks }
      : { status: "ready", checks };
    return { status: failed.length ? 503 : 200, body: scrubSecrets(JSON.stringify(body)) };
  };

  private async cached(name: string, check: () => Promise<unknown>): Promise<CheckOutcome> {
    const { nowMs, rules } = this.parts;
    const now = nowMs();
    const entry = this.checks.get(name);
    if (entry && now - entry.at < rules.checkIntervalMs) return entry.outcome;
    if (entry?.pending) return entry.pending;
    const pending = Promise.race([
      check().then(
        () => "ok",
        (error: unknown) => messageOf(error),
      ),
      sleep(CHECK_TIMEOUT_MS, { unref: true }).then(
        () => `no answer within ${CHECK_TIMEOUT_MS / 1000} s`,
      ),
    ]).then((outcome) => {
      this.checks.set(name, { at: nowMs(), outcome });
      return outcome;
    });
    this.checks.set(name, { at: entry?.at ?? 0, outcome: entry?.outcome ?? "ok", pending });
    return pending;
  }

  private recentSyncs(): CheckOutcome {
    const { failedSyncs } = this.parts.rules;
    const runs = this.parts.store.runs.recentFinished("sync", failedSyncs);
    if (runs.length < failedSyncs || runs.some((r) => r.status !== "failed")) return "ok";
    return `the last ${failedSyncs} syncs failed${runs[0]?.detail ? `: ${runs[0].detail}` : ""}`;
  }

  /**
   * Lag of resources that are not silent (a silent device is the silent-device alert's business).
   */
  private lagCheck(): CheckOutcome {
    const { apiNow, silenceAt, store, rules: readiness } = this.parts;
    const nowS = epochSeconds(apiNow());
    const rules = silenceAt(nowS);
    let worst: { name: string; lagS: number } | undefined;
    for (const c of store.cursors.list()) {
      if (silentSince(c, nowS, rules) !== undefined) continue;
      const lagS = nowS - c.fetchedUntilS;
      if (!worst || lagS > worst.lagS) worst = { name: `${c.deviceId}/${c.resourceId}`, lagS };
    }
    if (!worst || worst.lagS <= readiness.maxLagS) return "ok";
    return `${worst.name} lags ${worst.lagS} s (READY_MAX_LAG ${readiness.maxLagS} s)`;
  }

  private stateCheck(): CheckOutcome {
    try {
      this.parts.store.checkFile();
      return "ok";
    } catch (error) {
      return messageOf(error);
    }
  }
}
