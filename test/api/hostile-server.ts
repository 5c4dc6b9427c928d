import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ApiClient, type ApiClientOptions } from "../../src/api/api-client.js";
import type { DataQuery } from "../../src/api/data-stream.js";
import { captureLogger } from "../support/log-capture.js";

/** A tiny HTTP server on loopback for answers the simulator never gives. */
export interface HostileServer {
  readonly url: string;
  /** Paths requested, in order (without the query). */
  readonly paths: string[];
  /** Runs `cleanup` on close (intervals of trickling answers). */
  onClose(cleanup: () => void): void;
  /** Drops every connection and stops listening. */
  close(): Promise<void>;
}

/** What the handler gets: the request, the answer, and the request's path (without query). */
export type HostileHandler = (req: IncomingMessage, res: ServerResponse, path: string) => void;

const open: HostileServer[] = [];

/**
 * Starts a server on 127.0.0.1 and `port` (default a free one); {@link closeHostileServers}
 * stops them all.
 */
export async function hostileServer(handler: HostileHandler, port = 0): Promise<HostileServer> {
  const paths: string[] = [];
  const cleanups: (() => void)[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    paths.push(path);
    req.resume();
    handler(req, res, path);
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const hostile: HostileServer = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    onClose: (cleanup) => cleanups.push(cleanup),
    close: async () => {
      for (const cleanup of cleanups.splice(0)) cleanup();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  open.push(hostile);
  return hostile;
}

/** Closes every server started by {@link hostileServer}; call it in afterEach. */
export async function closeHostileServers(): Promise<void> {
  await Promise.all(open.splice(0).map((s) => s.close()));
}

/** Answers POST /create_token with `token` (valid `expiresInS`), as the API does. */
export function answerToken(res: ServerResponse, token: string, expiresInS = 3600): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ token, expires_in: expiresInS }));
}

/** The error `promise` rejects with (fails the test when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection, the call succeeded");
}

/** The hostile tests' clock: a fixed instant. */
export const HOSTILE_NOW = Date.UTC(2026, 5, 15, 12, 0, 0);

/** One value over the hour before {@link HOSTILE_NOW}. */
export const HOSTILE_QUERY: DataQuery = {
  deviceId: "dev",
  resourceId: "all_data",
  values: ["v1"],
  from: new Date(HOSTILE_NOW - 3_600_000),
  to: new Date(HOSTILE_NOW),
};

/**
 * A client of a hostile server answering with `handler`; with `token`, the server hands out that
 * access token itself and `handler` gets the other requests.
 */
export async function hostileClient(
  handler: HostileHandler,
  options: Partial<ApiClientOptions> = {},
  token?: string,
): Promise<{ client: ApiClient; paths: string[] }> {
  const server = await hostileServer((req, res, path) => {
    if (token !== undefined && path === "/create_token") answerToken(res, token);
    else handler(req, res, path);
  });
  const client = new ApiClient({
    baseUrl: server.url,
    apiKey: "hostile-key",
    user: "u",
    password: "hostile-pw",
    timeoutMs: 30_000,
    retry: { retries: 5, baseDelayMs: 5, maxDelayMs: 20 },
    logger: captureLogger().logger,
    ...options,
  });
  return { client, paths: server.paths };
}
