/**
 * The plant's alert rules (grafana/provisioning/alerting/energy-etl.yaml, issue #35) on fixtures:
 * line protocol as the pipeline writes it (docs/schema.md), in a database of its own on the test
 * run's influxd, each rule's queries run over their relative ranges and their reduce, threshold and
 * math expressions applied as Grafana would (alert-rules.ts). For each rule, devices whose data
 * should fire it and devices whose data should not.
 */
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { type InfluxqlSeries, influxql } from "../support/influxd.js";
import {
  type AlertRule,
  evaluateRuleIn,
  firing,
  labelKey,
  loadAlertRules,
  queryTextAt,
  ROLLUP_POLICY,
  type RuleQuery,
  rollupPolicies,
  ruleOf,
} from "./alert-rules.js";

const rules = loadAlertRules();
const rule = (uid: string): AlertRule => ruleOf(rules, uid);

const HOUR_S = 3600;
const DAY_S = 86_400;
/** Grafana's "now" for every evaluation: 20 June 2026, 14:00 UTC (after the noon hour). */
const NOW_S = Date.UTC(2026, 5, 20, 14, 0) / 1000;
/** Midnight (UTC) of NOW_S's day. */
const TODAY_S = NOW_S - 14 * HOUR_S;
const SAMPLE_S = 300;

/** Sample times every 5 minutes, fromS <= t < toS. */
function times(fromS: number, toS: number): number[] {
  const out: number[] = [];
  for (let t = fromS; t < toS; t += SAMPLE_S) out.push(t);
  return out;
}

const tags = (device: string, valuesId: string, unit: string, type: string): string =>
  `device_id=${device},resource_id=all_data,values_id=${valuesId},unit=${unit},type=${type}`;

/** A clear day's solar power in kW at `t`: a bell from 06:00 to 18:00 UTC, `peakKw` at noon. */
function bell(t: number, peakKw: number): number {
  const h = (t % DAY_S) / HOUR_S;
  return Math.round(peakKw * Math.max(0, Math.sin(((h - 6) / 12) * Math.PI)) * 1000) / 1000;
}

/** total_solar_power of `device` from two days before NOW_S's midnight to `untilS`. */
function solar(device: string, kw: (t: number) => number, untilS = NOW_S): string[] {
  return times(TODAY_S - 2 * DAY_S, untilS).map(
    (t) => `total_solar_power,${tags(device, "000", "kW", "continuous")} value=${kw(t)} ${t}`,
  );
}

const sampled = (measurement: string, head: string, points: [number, number][]): string[] =>
  points.map(([t, v]) => `${measurement},${head} value=${v} ${t}`);

/** Rollups of a counter as the pipeline writes them: hourly increases and UTC days' increases. */
function rollups(
  device: string,
  measurement: string,
  type: string,
  hourly: (hourS: number) => number,
): string[] {
  const head = `${tags(device, "000", "kWh", type)},measurement=${measurement}`;
  const hours = times(TODAY_S - 5 * DAY_S, NOW_S).filter((t) => t % HOUR_S === 0);
  const lines = hours.map((h) => `rollup_hour,${head} increase=${hourly(h)},base=0 ${h}`);
  for (let d = TODAY_S - 5 * DAY_S; d <= TODAY_S; d += DAY_S) {
    const sum = hours.filter((h) => h >= d && h < d + DAY_S).reduce((s, h) => s + hourly(h), 0);
    lines.push(`rollup_day,${head},tz=UTC increase=${sum},month="2026-06",year="2026" ${d}`);
  }
  return lines;
}

describe("the rollups' retention policy of the alert rules", () => {
  it("is one, ROLLUP_BUCKET's of docker-compose.yml (and init): no rule reads another", () => {
    // the oracle: docker-compose.yml's default, `${ROLLUP_BUCKET:-${INFLUX_BUCKET:-energy}/rollups}`
    expect(ROLLUP_POLICY).toBe("rollups");
    expect(rollupPolicies(rules)).toEqual([ROLLUP_POLICY]);
    expect(rollupPolicies(rules.filter((r) => r.uid === "energy-counter-stalled"))).toEqual([
      ROLLUP_POLICY,
    ]);
  });

  it("rollupPolicies names a rule's policy, and the default one as empty", () => {
    const ruleReading = (query: string): AlertRule => ({
      ...rule("energy-counter-stalled"),
      data: [{ refId: "A", datasourceUid: "influxdb", model: { query } }],
    });
    expect(rollupPolicies([ruleReading('SELECT 1 FROM "rollup_day"')])).toEqual([""]);
    expect(rollupPolicies([ruleReading('SELECT 1 FROM "autogen"."rollup_hour"')])).toEqual([
      "autogen",
    ]);
  });
});

describe("the plant's alert rules on fixtures (influxd)", () => {
  let db: TestInfluxDb;

  async function write(lines: readonly string[], rp?: string): Promise<void> {
    const url = new URL("/write", db.rawUrl);
    url.searchParams.set("db", db.bucket);
    url.searchParams.set("precision", "s");
    if (rp !== undefined) url.searchParams.set("rp", rp);
    const res = await fetch(url, { method: "POST", body: lines.join("\n") });
    if (res.status !== 204) throw new Error(`write: ${res.status} ${await res.text()}`);
  }

  beforeAll(async () => {
    db = await createTestInfluxDb("plant_alerts");
    await influxql(
      db.rawUrl,
      db.bucket,
      `CREATE RETENTION POLICY "${ROLLUP_POLICY}" ON "${db.bucket}" DURATION INF REPLICATION 1`,
    );
  });

  const answer = (q: RuleQuery): Promise<InfluxqlSeries[]> => db.series(queryTextAt(q, NOW_S));

  /** The rule's instances: which fire, which do not, and the numbers of an expression. */
  async function outcome(uid: string, refId = "B") {
    const { fires, numbers } = await evaluateRuleIn(rule(uid), answer);
    return {
      firing: firing(fires).sort(),
      quiet: [...fires]
        .filter(([, on]) => !on)
        .map(([key]) => key)
        .sort(),
      values: numbers.get(refId) ?? new Map<string, number>(),
    };
  }

  it("a device alarm: one alert per device and alarm, labelled with the alarm's name, while the device sends its points; not once cleared", async () => {
    // as the pipeline writes it (docs/schema.md): the tag alarm (first key) holds the name,
    // commas, equals signs and spaces escaped
    const tagText = (text: string): string => text.replace(/[,= ]/g, "\\$&");
    const alarm = (device: string, resource: string, atS: number, index: number, name: string) =>
      `alarm,alarm=${tagText(name)},device_id=${device},resource_id=${resource},type=alarm,unit=none,values_id=none alarm_index=${index},alarm_name="${name}" ${atS}`;
    await write([
      // raised 50 minutes ago, still in the newest sample, listed in two resources
      ...times(NOW_S - 3000, NOW_S).flatMap((t) => [
        alarm("alarm-on", "all_data", t, 402, "Low fuel"),
        alarm("alarm-on", "battery_bank", t, 402, "Low fuel"),
      ]),
      // a second alarm of the same device (another resource), raised 10 minutes ago
      ...times(NOW_S - 600, NOW_S).map((t) =>
        alarm("alarm-on", "inverter", t, 17, "Overtemperature, inverter=1"),
      ),
      // raised and cleared 40 minutes ago: no alarm point since
      ...times(NOW_S - 5400, NOW_S - 2400).map((t) =>
        alarm("alarm-cleared", "all_data", t, 104, "Grid failure"),
      ),
    ]);
    const { firing: on, quiet, values } = await outcome("energy-device-alarm");
    const fuel = { device_id: "alarm-on", alarm: "Low fuel" };
    const heat = { device_id: "alarm-on", alarm: "Overtemperature, inverter=1" };
    expect(on).toEqual([labelKey(fuel), labelKey(heat)].sort());
    expect(quiet).toEqual([]);
    expect(values.get(labelKey(fuel))).toBe(402);
    expect(values.get(labelKey(heat))).toBe(17);
    // the summary names the alarm: its template filled as Grafana fills it
    const summary = (labels: Record<string, string>, value: number): string =>
      (rule("energy-device-alarm").annotations?.summary ?? "")
        .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, k: string) => labels[k] ?? "<no value>")
        .replace(/\{\{ \$values\.B\.Value \}\}/g, String(value));
    expect(summary(fuel, 402)).toBe("alarm-on raised alarm Low fuel (402)");
    expect(summary(heat, 17)).toBe("alarm-on raised alarm Overtemperature, inverter=1 (17)");
  });

  it("no solar power around noon: fires for a device dark all day after a sunny day; not for a sunny one, one that never produced, one dark outside the noon hour, one whose noon is not synced", async () => {
    const today = (t: number): boolean => t >= TODAY_S;
    await write([
      ...solar("solar-dead", (t) => (today(t) ? 0 : bell(t, 4))),
      ...solar("solar-ok", (t) => bell(t, 5)),
      // no production the day before either (no PV on it, or dead for days)
      ...solar("solar-never", () => 0),
      // dark in the morning and from 13:00, but power in the noon hour
      ...solar("solar-noon-only", (t) => {
        const h = (t % DAY_S) / HOUR_S;
        return today(t) && (h < 11.75 || h >= 13) ? 0 : bell(t, 3);
      }),
      // today's readings end at 11:00: the noon hour is not synced yet
      ...solar("solar-unsynced", (t) => (today(t) ? 0 : bell(t, 4)), TODAY_S + 11 * HOUR_S),
    ]);
    const { firing: on, quiet } = await outcome("energy-solar-none-at-noon");
    const key = (d: string) => labelKey({ device_id: d, resource_id: "all_data" });
    expect(on).toEqual([key("solar-dead")]);
    expect(quiet).toEqual(
      ["solar-never", "solar-noon-only", "solar-ok", "solar-unsynced"].map(key).sort(),
    );
    // D, the day before's noon hour: the highest power of 11:30 to 12:30 UTC
    const before = (await outcome("energy-solar-none-at-noon", "E")).values;
    expect(before.get(key("solar-dead"))).toBeCloseTo(bell(TODAY_S - DAY_S + 12 * HOUR_S, 4), 3);
  });

  it("genset fuel: fires below 20 litres; not at 60 L, after a refill, or for a level in % or a tank's level", async () => {
    const fuel = (device: string, unit: string) => tags(device, "005", unit, "continuous");
    await write([
      ...sampled("fuel_level", fuel("fuel-low", "liter"), [
        [NOW_S - 1800, 24],
        [NOW_S - 600, 15.5],
      ]),
      ...sampled("fuel_level", fuel("fuel-ok", "liter"), [[NOW_S - 600, 60]]),
      ...sampled("fuel_level", fuel("fuel-refilled", "liter"), [
        [NOW_S - 1800, 12],
        [NOW_S - 600, 110],
      ]),
      // a percentage is not litres: the rule selects unit liter
      ...sampled("fuel_level", fuel("fuel-percent", "%"), [[NOW_S - 600, 10]]),
      // litres, but not named like fuel
      ...sampled("water_tank_level", fuel("fuel-ok", "liter"), [[NOW_S - 600, 5]]),
    ]);
    const { firing: on, quiet, values } = await outcome("energy-genset-fuel-low");
    const key = (d: string) =>
      labelKey({ device_id: d, resource_id: "all_data", values_id: "005" });
    expect(on).toEqual([key("fuel-low")]);
    expect(quiet).toEqual([key("fuel-ok"), key("fuel-refilled")].sort());
    expect(values.get(key("fuel-low"))).toBe(15.5);
  });

  it("grid voltage absent: fires at 0 V; not at 231 V, once the grid is back, or for a battery's 48 V", async () => {
    const volts = (device: string) => tags(device, "003", "V", "continuous");
    await write([
      ...sampled("grid_voltage", volts("grid-down"), [
        [NOW_S - 1200, 230.5],
        [NOW_S - 900, 0],
        [NOW_S - 600, 0],
      ]),
      ...sampled("grid_voltage", volts("grid-up"), [[NOW_S - 600, 231]]),
      ...sampled("grid_voltage", volts("grid-back"), [
        [NOW_S - 900, 0],
        [NOW_S - 600, 229.8],
      ]),
      // a voltage in V that is not the grid's: selected by unit alone it would fire
      ...sampled("battery_voltage", volts("grid-up"), [[NOW_S - 600, 48]]),
    ]);
    const { firing: on, quiet } = await outcome("energy-grid-voltage-absent");
    const key = (d: string) =>
      labelKey({ device_id: d, resource_id: "all_data", values_id: "003" });
    expect(on).toEqual([key("grid-down")]);
    expect(quiet).toEqual([key("grid-back"), key("grid-up")].sort());
  });

  it("a counter that stopped rising: fires for one flat for 24 h after rising every day; not for a rising one, a genset's that rests on some days, or a daily-reset counter", async () => {
    const stopAtS = NOW_S - DAY_S - HOUR_S;
    await write(
      [
        // the load counter stops rising 25 hours ago
        ...rollups("counter-stuck", "total_load_energy", "cumulative", (h) =>
          h < stopAtS ? 0.5 : 0,
        ),
        ...rollups("counter-ok", "total_load_energy", "cumulative", () => 0.4),
        // a standby genset: ran 3 days ago only
        ...rollups("counter-ok", "genset_energy", "cumulative", (h) =>
          h >= TODAY_S - 3 * DAY_S && h < TODAY_S - 3 * DAY_S + 2 * HOUR_S ? 6 : 0,
        ),
        // a daily-reset counter is not of type cumulative
        ...rollups("counter-stuck", "energy_today", "cumulative_daily_reset", (h) =>
          h < stopAtS ? 0.5 : 0,
        ),
      ],
      ROLLUP_POLICY,
    );
    const { firing: on, quiet } = await outcome("energy-counter-stalled");
    const key = (d: string, m: string) =>
      labelKey({ device_id: d, resource_id: "all_data", values_id: "000", measurement: m });
    expect(on).toEqual([key("counter-stuck", "total_load_energy")]);
    expect(quiet).toEqual(
      [key("counter-ok", "genset_energy"), key("counter-ok", "total_load_energy")].sort(),
    );
  });
});
