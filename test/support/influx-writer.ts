import type { AddressInfo, Socket } from "node:net";
import { createServer as createNetServer } from "node:net";
import type { InfluxApi } from "../../src/influx/influx-connection.js";
import { InfluxWriter, type InfluxWriterOptions } from "../../src/influx/influx-writer.js";
import type { TestInfluxDb } from "./influx-db.js";
import { captureLogger } from "./log-capture.js";
import { waitUntil } from "./wait.js";

/**
 * A writer for a test database with fast retries; its log lines are kept. `db.api` (default `v2`,
 * the proxy's) is the write path: `v1` with `url: db.rawUrl` writes influxd directly.
 */
export function writerFor(
  db: Pick<TestInfluxDb, "url" | "token" | "org" | "bucket"> & { readonly api?: InfluxApi },
  overrides: Partial<InfluxWriterOptions> = {},
) {
  const { logger, lines } = captureLogger("debug");
  const writer = new InfluxWriter({
    url: db.url,
    token: db.token,
    org: db.org,
    bucket: db.bucket,
    api: db.api ?? "v2",
    batchSize: 5000,
    timeoutMs: 5000,
    retry: { retries: 2, baseDelayMs: 10, maxDelayMs: 50 },
    logger,
    ...overrides,
  });
  return { writer, logLines: lines };
}

/** The log entries (parsed JSON) of a captured logger whose `msg` is `msg`. */
export function logEntries(logLines: readonly string[], msg: string): Record<string, unknown>[] {
  return logLines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg);
}

/** The warning InfluxWriter logs once per batch whose lines it narrowed down. */
export const REFUSED_LINES_LOG = "InfluxDB refused lines of a batch; the others are written";

/** A hostile InfluxDB on loopback: accepts TCP connections and never answers a byte. */
export interface HungInfluxDb {
  readonly url: string;
  /** Connections accepted so far. */
  connections(): number;
  /** Connections still open (the client's aborted requests close theirs). */
  openConnections(): number;
  /** Resolves once a connection has been accepted (bounded by `timeoutMs`). */
  connected(timeoutMs?: number): Promise<void>;
  /** Resolves once every accepted connection was closed by the client (bounded by `timeoutMs`). */
  allClosed(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function hungInfluxDb(): Promise<HungInfluxDb> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createNetServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
    socket.resume(); // read the request, never answer it
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => accepted,
    openConnections: () => sockets.size,
    connected: async (timeoutMs = 10_000) => {
      await waitUntil(() => accepted > 0, "a connection", { timeoutMs, intervalMs: 10 });
    },
    allClosed: async (timeoutMs = 10_000) => {
      await waitUntil(() => sockets.size === 0, "the client to close its connections", {
        timeoutMs,
        intervalMs: 10,
      });
    },
    close: () =>
      new Promise<void>((r) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => r());
      }),
  };
}
