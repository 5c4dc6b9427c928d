import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One route of the health server: status, content type and body. */
export type HealthHandler = () => Promise<{ status: number; type?: string; body: string }>;

/** The health endpoints' server: GET and HEAD (no body); unknown paths 404, other methods 405. */
export class HealthServer {
  private readonly server: Server;

  constructor(private readonly routes: Readonly<Record<string, HealthHandler>>) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  }

  /** Listens on `port` (0: any free one) of `host`; resolves with the port. */
  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const handler = this.routes[path];
    if (!handler) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end(req.method === "HEAD" ? undefined : "not found\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { "content-type": "text/plain", allow: "GET, HEAD" });
      res.end("method not allowed\n");
      return;
    }
    const { status, type, body } = await handler();
    res.writeHead(status, {
      "content-type": type ?? "application/json",
      "content-length": Buffer.byteLength(body),
    });
    res.end(req.method === "HEAD" ? undefined : body);
  }
}
