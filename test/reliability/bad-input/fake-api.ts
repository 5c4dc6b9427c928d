/**
 * The fake Energy Monitoring Data API of the bad-input tests (node:http on loopback): the catalog
 * of a simulated fleet served correctly and, for GET /data, whatever the test planned for the
 * request's key; and what the steps of the tests share of their setup.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { formatQueryTime } from "../../../src/api/time-format.js";
import type { Pipeline } from "../../../src/pipeline/pipeline.js";
import type { Chunk } from "../../../src/pipeline/plan-chunks.js";
import type { SimulatedFleet } from "../../../src/simulator/model/fleet.js";
import type { TestInfluxDb } from "../../support/influx-db.js";
import { API_KEY, DEVICE } from "./scenario.js";

export interface Served {
  readonly status: number;
  readonly body: string;
  readonly contentType: string;
}

/** Key of one data request: device, resource, values and window, as the API sees them. */
const requestKey = (device: string, resource: string, values: string, from: string, to: string) =>
  `${device}|${resource}|${values}|${from}|${to}`;
export const chunkKey = (device: string, resource: string, chunk: Chunk) =>
  requestKey(
    device,
    resource,
    chunk.values.join(","),
    formatQueryTime(new Date(chunk.fromS * 1000)),
    formatQueryTime(new Date(chunk.toS * 1000)),
  );

/**
 * Serves create_token, devices, resources and values of `fleet` correctly; GET /data answers what
 * `dataFor` says for the request's key (404 when it has nothing). Counts the data requests per key.
 */
export class FakeApi {
  readonly dataRequests = new Map<string, number>();
  private readonly server: Server;
  private baseUrl = "";

  constructor(
    private readonly fleet: SimulatedFleet,
    private readonly dataFor: (key: string) => Served | undefined,
  ) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`fake api failure: ${String(error)}`);
      });
    });
  }

  get url(): string {
    return this.baseUrl;
  }

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for await (const _ of req) {
      // drain the body
    }
    const url = new URL(req.url ?? "/", "http://fake");
    const segments = url.pathname
      .split("/")
      .filter((s) => s !== "")
      .map(decodeURIComponent);
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    if (req.method === "POST" && segments[0] === "create_token") {
      if (req.headers["x-api-key"] !== API_KEY) return json(403, { error: "invalid api key" });
      return json(200, { token: "fake-token", expires_in: 3600 });
    }
    if (req.headers.authorization !== "Bearer fake-token") return json(401, { error: "token" });
    const [first = "", second = "", third = ""] = segments;
    if (segments.length === 1 && first === "devices") {
      return json(200, { device_ids: [DEVICE] });
    }
    if (segments.length === 2 && second === "resources") {
      return json(200, { device_id: first, resource_ids: this.fleet.resourceIds(first) ?? [] });
    }
    if (segments.length === 3 && third === "values") {
      return json(200, {
        device_id: first,
        resource_id: second,
        values: this.fleet.valueIds(first, second) ?? [],
      });
    }
    if (segments.length === 3 && first === "data") {
      const q = url.searchParams;
      const key = requestKey(
        second,
        third,
        q.get("values") ?? "",
        q.get("from") ?? "",
        q.get("to") ?? "",
      );
      this.dataRequests.set(key, (this.dataRequests.get(key) ?? 0) + 1);
      const served = this.dataFor(key);
      if (!served) return json(404, { error: `nothing planned for ${key}` });
      res.writeHead(served.status, { "content-type": served.contentType });
      res.end(served.body);
      return;
    }
    json(404, { error: "no such endpoint" });
  }
}

/** What a step of the tests works with: the parts the describe block sets up. */
export interface Harness {
  readonly pipeline: Pipeline;
  readonly db: TestInfluxDb;
  readonly api: FakeApi;
  /** What GET /data answers, per request key. */
  readonly planned: Map<string, Served>;
  /** Every chunk error, as the pipeline's observer is told (the logs hold only the message). */
  readonly failures: readonly unknown[];
  readonly logLines: readonly string[];
}
