/**
 * An InfluxDB that drops some points of a write and says only how many, as InfluxDB 1.x does
 * (`partial write: ... dropped=N`, naming no line): a front on loopback that stores the other
 * lines (in memory, or in a real influxd behind it) and answers 400 with the count. Every other
 * request passes to the target untouched.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A front before InfluxDB that turns writes into partial writes (see the module comment). */
export interface WriteFront {
  readonly url: string;
  /** Write requests received so far. */
  writes(): number;
  /** Lines stored, in the order they came (a line written twice is twice). */
  readonly stored: string[];
  /** Every line dropped so far. */
  readonly dropped: Set<string>;
  /** Which lines are dropped from now on. */
  drop: (line: string) => boolean;
  /** While set, writes of lines that come wait for it (counted at once; empty ones go on). */
  paused: Promise<void> | undefined;
  /** Writes waiting on {@link paused} now. */
  held(): number;
  /** The status a write of these lines is refused with as a whole (undefined: none). */
  refuse: (lines: readonly string[]) => number | undefined;
  close(): Promise<void>;
}

/** What a partial write answers: InfluxDB 1.x's words, with the count (if any). */
export function partialWriteBody(
  dropped: number | undefined,
  why: { readonly measurement?: string; readonly reason?: "conflict" | "retention" } = {},
): string {
  const count = dropped === undefined ? "" : ` dropped=${dropped}`;
  const message =
    why.reason === "retention"
      ? `partial write: points beyond retention policy${count}`
      : `partial write: field type conflict: input field "value" on measurement ` +
        `"${why.measurement ?? "m"}" is type string, already exists as type float${count}`;
  return JSON.stringify({ code: "invalid", message });
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Forwards a request to `target` with `body`; answers with what the target answered. */
async function forward(
  target: string,
  req: IncomingMessage,
  body: Buffer,
  res: ServerResponse,
): Promise<void> {
  const headers = new Headers();
  for (const name of ["authorization", "content-type", "accept"]) {
    const value = req.headers[name];
    if (typeof value === "string") headers.set(name, value);
  }
  const answer = await fetch(new URL(req.url ?? "/", target), {
    method: req.method ?? "GET",
    headers,
    ...(req.method === "GET" || req.method === "HEAD" ? {} : { body }),
  });
  const text = Buffer.from(await answer.arrayBuffer());
  const type = answer.headers.get("content-type");
  res.writeHead(answer.status, type === null ? {} : { "content-type": type });
  res.end(text);
}

/**
 * Starts a front: lines for which `drop` is true are dropped, the others stored in `target` (a
 * base URL) or, without one, kept in {@link WriteFront.stored}.
 */
export async function startWriteFront(options: {
  readonly target?: string;
  readonly drop: (line: string) => boolean;
  /** The count the answer gives for `dropped` of `lines` (default: the truth; undefined: none). */
  readonly count?: (dropped: number, lines: number) => number | undefined;
  /** The measurement a field type conflict names (default "m"). */
  readonly measurement?: string;
  /** Why points are dropped: a field type conflict (default) or the retention policy. */
  readonly reason?: "conflict" | "retention";
}): Promise<WriteFront> {
  let writes = 0;
  let held = 0;
  const stored: string[] = [];
  const droppedLines = new Set<string>();
  const front: Pick<WriteFront, "drop" | "paused" | "refuse"> = {
    drop: options.drop,
    paused: undefined,
    refuse: () => undefined,
  };
  const server = createServer((req, res) => {
    void (async () => {
      const { target } = options;
      const url = req.url ?? "/";
      const isWrite = url.startsWith("/api/v2/write");
      if (isWrite) writes++;
      const body = await bodyOf(req);
      if (isWrite && body.length > 0 && front.paused) {
        held++;
        await front.paused;
        held--;
      }
      if (!isWrite) {
        if (target === undefined) res.writeHead(204).end();
        else await forward(target, req, body, res);
        return;
      }
      const lines = body.toString("utf8").split("\n").filter(Boolean);
      const refused = front.refuse(lines);
      if (refused !== undefined) {
        res.writeHead(refused, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: "unauthorized", message: "refused by the test's front" }));
        return;
      }
      const kept = lines.filter((line) => {
        if (!front.drop(line)) return true;
        droppedLines.add(line);
        return false;
      });
      const dropped = lines.length - kept.length;
      if (target !== undefined && kept.length > 0) {
        const answer = await fetch(new URL(url, target), {
          method: "POST",
          headers: { authorization: req.headers.authorization ?? "" },
          body: kept.join("\n"),
        });
        if (!answer.ok) throw new Error(`the target refused the kept lines: ${answer.status}`);
      }
      stored.push(...kept);
      if (dropped === 0) res.writeHead(204).end();
      else {
        const count = options.count ? options.count(dropped, lines.length) : dropped;
        res.writeHead(400, { "content-type": "application/json" });
        res.end(partialWriteBody(count, options));
      }
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    writes: () => writes,
    held: () => held,
    stored,
    dropped: droppedLines,
    get drop() {
      return front.drop;
    },
    set drop(fn) {
      front.drop = fn;
    },
    get refuse() {
      return front.refuse;
    },
    set refuse(fn) {
      front.refuse = fn;
    },
    get paused() {
      return front.paused;
    },
    set paused(until) {
      front.paused = until;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
