/** What a backfill fetches: one job per device and resource over the asked-for range. */
import type { Logger } from "pino";
import type { Answered } from "../api/api-request.js";
import { VALUES_ID } from "../api/limits.js";
import type { QueuedBackfill } from "../state/job-store.js";
import type { StateStore } from "../state/state-store.js";
import type { BackfillSpec } from "../state/types.js";
import { didYouMean } from "../util/suggest.js";
import {
  type CatalogReadParts,
  type CatalogResource,
  deviceCatalog,
  readCatalog,
} from "./catalog.js";
import { countChunks } from "./plan-chunks.js";
import { type SelectParts, selectDevices } from "./select-devices.js";

/** What `energy-etl backfill` asks for. */
export interface BackfillRequest {
  /** Device ids, or every device of this shard. */
  readonly devices: readonly string[] | "all";
  readonly fromS: number;
  readonly toS: number;
  /** Only these value ids (default: every value of each resource). */
  readonly values?: readonly string[];
  /** Plan only: leave the value catalog untouched. */
  readonly dryRun?: boolean;
}

/** One planned job: what it covers and how many requests it takes. */
export interface PlannedBackfill {
  readonly spec: BackfillSpec;
  readonly chunks: number;
  /** The stored job this is ({@link remainingBackfill}): `chunks` is what it has left. */
  readonly continues?: { readonly id: number; readonly chunksDone: number; readonly done: boolean };
}

/** A planned backfill, and the catalog requests planning it took. */
export interface BackfillPlan {
  readonly jobs: readonly PlannedBackfill[];
  readonly requests: number;
  /** Each dry-run catalog answer's ms from sending to its whole answer: the API's latency now. */
  readonly latencyMs: readonly number[];
}

/** Plans a backfill from the catalog: the requested value ids must exist. */
export async function planBackfill(
  parts: SelectParts,
  request: BackfillRequest,
): Promise<BackfillPlan> {
  const selected = await selectDevices(parts, request.devices);
  let { requests } = selected;
  const latencyMs: number[] = [];
  const planned: PlannedBackfill[] = [];
  const known = new Set<string>();
  for (const deviceId of selected.deviceIds) {
    // the stored catalog while fresh, as sync does; a dry run reads the API and records nothing
    const log = parts.logger.child({ device: deviceId });
    const catalog = request.dryRun
      ? await dryRunCatalog(parts, deviceId, log)
      : await deviceCatalog(parts, deviceId, "refresh-due", log);
    requests += catalog.requests;
    if ("latencyMs" in catalog) latencyMs.push(...catalog.latencyMs);
    const { resources } = catalog;
    for (const { resourceId, values } of resources) {
      for (const v of values) known.add(v);
      const asked = request.values?.filter((v) => values.includes(v)) ?? values;
      if (request.values && asked.length === 0) continue;
      const spec: BackfillSpec = {
        deviceId,
        resourceId,
        valueIds: [...new Set(asked.filter((v) => v !== VALUES_ID))].sort(),
        fromS: request.fromS,
        toS: request.toS,
        reason: "manual",
      };
      planned.push({ spec, chunks: countChunks(spec.valueIds.length, spec.fromS, spec.toS) });
    }
  }
  if (request.values) {
    const seen = new Set(planned.flatMap((p) => p.spec.valueIds));
    const missing = request.values.filter((v) => !seen.has(v));
    if (missing.length > 0) {
      const hint = missing.length === 1 ? didYouMean(missing[0] ?? "", known) : "";
      throw new Error(
        `unknown value id for these devices: ${missing.join(", ")}${hint} (see energy-etl values DEVICE)`,
      );
    }
  }
  return { jobs: planned, requests, latencyMs };
}

/** Stores a plan as jobs (`JobStore.queue`: continuing the unfinished ones they overlap). */
export function queueBackfill(
  pipeline: { readonly store: Pick<StateStore, "jobs">; readonly now: () => Date },
  plan: readonly Pick<PlannedBackfill, "spec">[],
): QueuedBackfill {
  const specs = plan.map((p) => p.spec);
  return pipeline.store.jobs.queue(specs, countChunks, pipeline.now());
}

/** What {@link queueBackfill} would make of a plan, storing nothing (a dry run). */
export function remainingBackfill(
  pipeline: { readonly store: Pick<StateStore, "jobs"> },
  plan: readonly Pick<PlannedBackfill, "spec">[],
): PlannedBackfill[] {
  const matches = pipeline.store.jobs.match(
    plan.map((p) => p.spec),
    countChunks,
  );
  return matches.flatMap(({ continued, finished, created }) => {
    const stored = [...continued, ...finished].map((job): PlannedBackfill => {
      const { deviceId, resourceId, valueIds, fromS, toS, reason } = job;
      const chunks = countChunks(valueIds.length, fromS, toS);
      // a job whose chunking changed starts over (JobStore.queue)
      const chunksDone = chunks === job.chunksTotal ? job.chunksDone : 0;
      const done = job.status === "done";
      return {
        spec: { deviceId, resourceId, valueIds, fromS, toS, reason },
        chunks: done ? 0 : chunks - chunksDone,
        continues: { id: job.id, chunksDone, done },
      };
    });
    const added = created.map((part) => ({
      spec: part,
      chunks: countChunks(part.valueIds.length, part.fromS, part.toS),
    }));
    return [...stored, ...added].sort((a, b) => a.spec.fromS - b.spec.fromS);
  });
}

/**
 * A device's resources and value lists read from the API, recorded nowhere (a dry run), and how
 * long each answer took from its sending (the client's clock is Date.now outside tests of
 * virtual time, which plan no dry run).
 */
async function dryRunCatalog(
  parts: CatalogReadParts,
  deviceId: string,
  log: Logger,
): Promise<{ resources: CatalogResource[]; requests: number; latencyMs: number[] }> {
  const latencyMs: number[] = [];
  // from the answered attempt's sending (after the rate gate and the token): one request's time
  const answered = (answer: Answered<unknown>) =>
    latencyMs.push(Math.max(0, Date.now() - answer.sentAtMs));
  const read = await readCatalog(parts, deviceId, log, { answered });
  if ("unknown" in read) throw read.unknown;
  return { ...read, latencyMs };
}
