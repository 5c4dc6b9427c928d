import type Database from "better-sqlite3";
import { z } from "zod";
import { jsonStringArray, parseRow, parseRows, requireText, sortedIds } from "./rows.js";

type Key = { deviceId: string; resourceId: string };

/** A device's resources and their listed value ids, as its last catalog read found them. */
export interface StoredDeviceCatalog {
  /** When they were read (ISO); undefined: never, or not since the device was last unlisted. */
  readonly readAt?: string;
  readonly resources: readonly {
    readonly resourceId: string;
    readonly values: readonly string[];
  }[];
}

const DEVICE_LIST = "devices";

const resourceValuesRow = z.tuple([z.string(), z.string()]);
/** Schemas of plucked values, built once (building one costs more than parsing with it). */
const text = z.string();
const optionalText = z.string().optional();
const readTime = z.string().nullable().optional();

/** Value lists kept at most (distinct lists: devices of one kind share theirs). */
const MAX_VALUE_LISTS = 4096;

/** The statements of the value lists (`value_catalog`), and a device's whole catalog. */
function valueStatements(db: Database.Database) {
  return {
    insert: db.prepare<Key & { valueId: string; now: string }>(
      `INSERT INTO value_catalog (device_id, resource_id, value_id, first_seen, last_seen, listed)
       VALUES (@deviceId, @resourceId, @valueId, @now, @now, 1)
       ON CONFLICT (device_id, resource_id, value_id) DO NOTHING`,
    ),
    touch: db.prepare<Key & { valueId: string; now: string }>(
      `UPDATE value_catalog SET last_seen = @now, listed = 1
       WHERE device_id = @deviceId AND resource_id = @resourceId AND value_id = @valueId`,
    ),
    unlistValues: db.prepare<Key & { ids: string }>(
      `UPDATE value_catalog SET listed = 0
       WHERE device_id = @deviceId AND resource_id = @resourceId AND listed = 1
         AND value_id NOT IN (SELECT value FROM json_each(@ids))`,
    ),
    list: db
      .prepare<Key>(
        `SELECT value_id FROM value_catalog
         WHERE device_id = @deviceId AND resource_id = @resourceId AND listed = 1
         ORDER BY value_id`,
      )
      .pluck(),
    // one row per listed resource, its listed values as a JSON array
    deviceCatalog: db
      .prepare<{ deviceId: string }>(
        `SELECT r.resource_id,
           json_group_array(v.value_id ORDER BY v.value_id) FILTER (WHERE v.value_id IS NOT NULL)
         FROM device_resources r
         LEFT JOIN value_catalog v ON v.device_id = r.device_id AND v.resource_id = r.resource_id
           AND v.listed = 1
         WHERE r.device_id = @deviceId AND r.listed = 1
         GROUP BY r.rowid
         ORDER BY r.rowid`,
      )
      .raw(),
  };
}

/** The statements of devices and resources (`devices`, `device_resources`, `catalog_reads`). */
function deviceStatements(db: Database.Database) {
  return {
    upsertDevice: db.prepare<{ deviceId: string; now: string }>(
      `INSERT INTO devices (device_id, listed, first_seen, last_seen) VALUES (@deviceId, 1, @now, @now)
       ON CONFLICT (device_id) DO UPDATE SET listed = 1, last_seen = @now`,
    ),
    unlistDevices: db.prepare<{ ids: string }>(
      `UPDATE devices SET listed = 0
       WHERE listed = 1 AND device_id NOT IN (SELECT value FROM json_each(@ids))`,
    ),
    listed: db.prepare("SELECT device_id FROM devices WHERE listed = 1 ORDER BY rowid").pluck(),
    markListRead: db.prepare<{ name: string; now: string }>(
      `INSERT INTO catalog_reads (name, read_at) VALUES (@name, @now)
       ON CONFLICT (name) DO UPDATE SET read_at = @now`,
    ),
    listReadAt: db
      .prepare<{ name: string }>("SELECT read_at FROM catalog_reads WHERE name = @name")
      .pluck(),
    upsertResource: db.prepare<Key & { now: string }>(
      `INSERT INTO device_resources (device_id, resource_id, listed, first_seen, last_seen)
       VALUES (@deviceId, @resourceId, 1, @now, @now)
       ON CONFLICT (device_id, resource_id) DO UPDATE SET listed = 1, last_seen = @now`,
    ),
    unlistResources: db.prepare<{ deviceId: string; ids: string }>(
      `UPDATE device_resources SET listed = 0
       WHERE device_id = @deviceId AND listed = 1
         AND resource_id NOT IN (SELECT value FROM json_each(@ids))`,
    ),
    markDeviceRead: db.prepare<{ deviceId: string; now: string }>(
      `INSERT INTO devices (device_id, listed, first_seen, last_seen, catalog_read_at)
       VALUES (@deviceId, 1, @now, @now, @now)
       ON CONFLICT (device_id) DO UPDATE SET catalog_read_at = @now`,
    ),
    unlistDevice: db.prepare<{ deviceId: string }>(
      "UPDATE devices SET listed = 0, catalog_read_at = NULL WHERE device_id = @deviceId",
    ),
    deviceReadAt: db
      .prepare<{ deviceId: string }>(
        "SELECT catalog_read_at FROM devices WHERE device_id = @deviceId",
      )
      .pluck(),
    due: db
      .prepare<{ before: string }>(
        `SELECT device_id FROM devices
         WHERE listed = 1 AND (catalog_read_at IS NULL OR catalog_read_at <= @before)
         ORDER BY catalog_read_at IS NOT NULL, catalog_read_at, rowid`,
      )
      .pluck(),
  };
}

/**
 * The catalog kept between runs: what the API's device, resource and value lists last answered,
 * and when. Ids no longer listed keep their row (listed = 0), so a value that returns is not new.
 */
export class CatalogStore {
  private readonly sql;
  /**
   * Each device's catalog as this process last read it, kept while its read time (set by every
   * change, in any process) is unchanged: a steady sync reads one read time per device.
   */
  private readonly cached = new Map<string, StoredDeviceCatalog & { readonly readAt: string }>();
  /** Value lists by their JSON text: one array per distinct list, shared by the devices. */
  private readonly valueLists = new Map<string, readonly string[]>();
  private readonly refreshTx;
  private readonly devicesTx;
  private readonly resourcesTx;

  constructor(db: Database.Database) {
    const sql = { ...valueStatements(db), ...deviceStatements(db) };
    this.sql = sql;
    this.refreshTx = db.transaction(
      (deviceId: string, resourceId: string, valueIds: readonly string[], now: string) => {
        const added: string[] = [];
        for (const valueId of sortedIds(valueIds)) {
          const row = { deviceId, resourceId, valueId, now };
          if (sql.insert.run(row).changes > 0) added.push(valueId);
          else sql.touch.run(row);
        }
        sql.unlistValues.run({ deviceId, resourceId, ids: JSON.stringify(valueIds) });
        return added;
      },
    );
    this.devicesTx = db.transaction((deviceIds: readonly string[], now: string) => {
      const before = new Set(parseRows(text, sql.listed.all(), "device id"));
      const added: string[] = [];
      for (const deviceId of new Set(deviceIds)) {
        sql.upsertDevice.run({ deviceId, now });
        if (!before.has(deviceId)) added.push(deviceId);
      }
      sql.unlistDevices.run({ ids: JSON.stringify(deviceIds) });
      sql.markListRead.run({ name: DEVICE_LIST, now });
      return added;
    });
    this.resourcesTx = db.transaction(
      (deviceId: string, resourceIds: readonly string[], now: string) => {
        for (const resourceId of new Set(resourceIds)) {
          sql.upsertResource.run({ deviceId, resourceId, now });
        }
        sql.unlistResources.run({ deviceId, ids: JSON.stringify(resourceIds) });
      },
    );
  }

  /**
   * Records the value ids a resource lists now (the others are no longer listed); returns the ids
   * never seen before, sorted. Call it in the transaction that ends with {@link markRead}: the read
   * time is what tells every process that the device's catalog changed.
   */
  refresh(deviceId: string, resourceId: string, valueIds: readonly string[], now: Date): string[] {
    this.cached.delete(deviceId);
    requireText("deviceId", deviceId);
    requireText("resourceId", resourceId);
    for (const id of valueIds) requireText("value id", id);
    return this.refreshTx(deviceId, resourceId, valueIds, now.toISOString());
  }

  /** The value ids a resource lists (as last read), sorted. */
  list(deviceId: string, resourceId: string): string[] {
    return parseRows(text, this.sql.list.all({ deviceId, resourceId }), "value id");
  }

  /** Records the device list GET /devices answered now; returns the devices not listed before. */
  recordDevices(deviceIds: readonly string[], now: Date): string[] {
    for (const id of deviceIds) requireText("device id", id);
    return this.devicesTx(deviceIds, now.toISOString());
  }

  /** The devices listed by the last GET /devices, in the order first seen. */
  listedDevices(): string[] {
    return parseRows(text, this.sql.listed.all(), "device id");
  }

  /** When the device list was last read; undefined when never. */
  devicesReadAt(): Date | undefined {
    const at = parseRow(optionalText, this.sql.listReadAt.get({ name: DEVICE_LIST }), "read time");
    return at === undefined ? undefined : new Date(at);
  }

  /** Records the resources a device lists now (the others are unlisted); see {@link refresh}. */
  recordResources(deviceId: string, resourceIds: readonly string[], now: Date): void {
    this.cached.delete(deviceId);
    requireText("deviceId", deviceId);
    for (const id of resourceIds) requireText("resource id", id);
    this.resourcesTx(deviceId, resourceIds, now.toISOString());
  }

  /** Marks a device's catalog (resources and value lists) as read now. */
  markRead(deviceId: string, now: Date): void {
    this.cached.delete(deviceId);
    requireText("deviceId", deviceId);
    this.sql.markDeviceRead.run({ deviceId, now: now.toISOString() });
  }

  /** Records that the API no longer knows a device (until a device list lists it again). */
  unlistDevice(deviceId: string): void {
    this.cached.delete(deviceId);
    this.sql.unlistDevice.run({ deviceId });
  }

  /** A device's stored catalog: its lists are read again only when its read time changed. */
  device(deviceId: string): StoredDeviceCatalog {
    const readAt = parseRow(readTime, this.sql.deviceReadAt.get({ deviceId }), "read time");
    const kept = this.cached.get(deviceId);
    if (kept !== undefined && kept.readAt === readAt) return kept;
    const rows = this.sql.deviceCatalog.all({ deviceId });
    const resources = parseRows(resourceValuesRow, rows, "catalog row").map(([resourceId, json]) =>
      Object.freeze({ resourceId, values: this.valueList(json) }),
    );
    // kept and handed out again: nobody may change it
    Object.freeze(resources);
    if (readAt == null) {
      this.cached.delete(deviceId);
      return { resources };
    }
    const catalog = { readAt, resources };
    this.cached.set(deviceId, catalog);
    return catalog;
  }

  /** The value list a JSON array holds, parsed once per distinct list. */
  private valueList(json: string): readonly string[] {
    const known = this.valueLists.get(json);
    if (known !== undefined) return known;
    const values = Object.freeze(parseRow(jsonStringArray, json, "value list"));
    if (this.valueLists.size >= MAX_VALUE_LISTS) this.valueLists.clear();
    this.valueLists.set(json, values);
    return values;
  }

  /** Listed devices whose catalog was never read or last read at or before `before`, oldest first. */
  due(before: Date): string[] {
    return parseRows(text, this.sql.due.all({ before: before.toISOString() }), "device id");
  }
}
