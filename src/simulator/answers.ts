/** Answers to authorised reads (spec 4): listings as of the clock, data with spec 8's checks. */
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS, VALUES_ID } from "../api/limits.js";
import { parseQueryTime } from "../api/time-format.js";
import type { DataRecord } from "../records/data-record.js";
import {
  type DataFaultOptions,
  dataFaultsActive,
  FAR_FUTURE_TIMESTAMP,
  hasOutOfWindowRowsFor,
  renderFaultedRecords,
  visibleRecords,
  YEAR_ZERO_TIMESTAMP,
} from "./data-faults.js";
import { type Answer, fail, json } from "./http.js";
import { COMMISSIONED_AT_S, type SimulatedFleet } from "./model/fleet.js";

/** GET /devices, /{device}/resources or /{device}/{resource}/values as listed at `nowS`. */
export function listingAnswer(
  fleet: SimulatedFleet,
  endpoint: "devices" | "resources" | "values",
  segments: readonly string[],
  nowS: number,
  extra: { readonly valueIds: readonly string[]; readonly deviceIds: readonly string[] },
): Answer {
  if (endpoint === "devices")
    return json(200, { device_ids: [...fleet.deviceIds(), ...extra.deviceIds] });
  const [deviceId = "", resourceId = ""] = segments;
  if (endpoint === "resources") {
    const resourceIds = fleet.resourceIds(deviceId, nowS);
    if (!resourceIds) return fail(404, `unknown device: ${deviceId}`);
    return json(200, { device_id: deviceId, resource_ids: resourceIds });
  }
  if (!fleet.hasDevice(deviceId)) return fail(404, `unknown device: ${deviceId}`);
  const values = fleet.valueIds(deviceId, resourceId, nowS);
  if (!values) return fail(404, `unknown resource: ${resourceId}`);
  return json(200, {
    device_id: deviceId,
    resource_id: resourceId,
    values: [...values, ...extra.valueIds],
  });
}

interface DataSource {
  readonly fleet: SimulatedFleet;
  readonly seed: number;
  readonly dataFaults: DataFaultOptions;
}

/** The query checked against the listed ids: its ids (first occurrence order), window, or error. */
function checkDataQuery(
  known: readonly string[],
  query: Record<string, string>,
): { ids: string[]; fromS: number; toS: number } | Answer {
  const { values, from, to } = query;
  if (!values) return fail(400, "missing parameter: values");
  if (/\s/.test(values)) return fail(400, "values must be separated by commas without spaces");
  const ids = [...new Set(values.split(","))];
  if (ids.some((id) => id === "")) return fail(400, "empty value id in values");
  if (ids.length > MAX_VALUES_PER_REQUEST) {
    return fail(400, `too many values: ${ids.length} (at most ${MAX_VALUES_PER_REQUEST})`);
  }
  if (ids.includes(VALUES_ID)) return fail(400, `${VALUES_ID} must not be requested`);
  const unknown = ids.find((id) => !known.includes(id));
  if (unknown !== undefined) return fail(404, `unknown value id: ${unknown}`);
  if (!from || !to) return fail(400, "missing parameter: from and to are required");
  const fromDate = parseQueryTime(from);
  const toDate = parseQueryTime(to);
  if (!fromDate) return fail(400, `malformed from: expected YYYYMMDDTHHMMSS`);
  if (!toDate) return fail(400, `malformed to: expected YYYYMMDDTHHMMSS`);
  if (toDate < fromDate) return fail(400, "to is before from");
  if (toDate.getTime() - fromDate.getTime() > MAX_WINDOW_MS) {
    return fail(400, "time interval too long: at most 7 days between from and to");
  }
  return { ids, fromS: fromDate.getTime() / 1000, toS: toDate.getTime() / 1000 };
}

/** GET /data/{device}/{resource}: the window's records up to `nowMs`, with the data faults. */
export function dataAnswer(
  source: DataSource,
  nowMs: number,
  deviceId: string,
  resourceId: string,
  query: Record<string, string>,
): Answer {
  const { fleet, seed } = source;
  const nowS = Math.floor(nowMs / 1000);
  if (!fleet.hasDevice(deviceId)) return fail(404, `unknown device: ${deviceId}`);
  const known = fleet.valueIds(deviceId, resourceId, nowS);
  if (!known) return fail(404, `unknown resource: ${resourceId}`);
  const checked = checkDataQuery(known, query);
  if ("status" in checked) return checked;
  const { ids, fromS } = checked;
  const toS = Math.min(checked.toS, nowS);
  const records = fromS > toS ? [] : fleet.records(deviceId, resourceId, ids, fromS, toS);
  const faults = source.dataFaults;
  if (!dataFaultsActive(faults)) return json(200, records);
  const { values = "", from = "", to = "" } = query;
  const request = { deviceId, resourceId, values, from, to };
  return {
    status: 200,
    body: renderFaultedRecords({
      seed,
      faults,
      deviceId,
      records: visibleRecords(faults.outages, deviceId, records, nowMs / 1000),
      appended: hasOutOfWindowRowsFor(seed, faults, request)
        ? outOfWindowRows(fleet, deviceId, resourceId, ids)
        : [],
    }),
    headers: { "content-type": "application/json" },
  };
}

/** The two out-of-window rows: the first row of the commissioning day, re-stamped. */
function outOfWindowRows(
  fleet: SimulatedFleet,
  deviceId: string,
  resourceId: string,
  ids: string[],
): DataRecord[] {
  const end = COMMISSIONED_AT_S + fleet.resolutionS;
  const [row] = fleet.records(deviceId, resourceId, ids, COMMISSIONED_AT_S, end);
  if (row === undefined) return [];
  return [
    { ...row, timestamp: FAR_FUTURE_TIMESTAMP },
    { ...row, timestamp: YEAR_ZERO_TIMESTAMP },
  ];
}
