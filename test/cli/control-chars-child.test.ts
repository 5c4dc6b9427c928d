/**
 * A device id (and an error text) from the API or the state DB that holds CR, LF, ESC and other
 * control characters prints neither a fake line nor colours: the built CLI, as a child process
 * whose stdout is captured, shows it escaped as JSON escapes it in `devices`, the summary lines
 * of `sync`, `status` and `dead-letters` (tab-separated values when piped, the same on a terminal
 * in-process). The API is a stand-in of this test that lists such a device.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { runCli } from "../../src/cli.js";
import { StateStore } from "../../src/state/state-store.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { bufferIo } from "../support/cli-io.js";
import { asTerminal } from "../support/fake-tty.js";
import { tempStateDb } from "../support/pipeline.js";
import { controlsIn as rawControlsIn } from "../support/raw-controls.js";
import { tempDir } from "../support/temp-dir.js";

/** A device id that would print a fake summary line in red on a terminal. */
const EVIL = "evil\r\nsync ok: 0 devices\u001b[31mred\u202edner";
/** EVIL as it must be shown. */
const SHOWN = "evil\\r\\nsync ok: 0 devices\\u001b[31mred\\u202edner";
/** An error text with a bell, a DEL, a C1 CSI, a clear-screen sequence and bidi isolates. */
const EVIL_ERROR = "refused\u0007 line\u007f\u009b2J\u001b[2J\u2067ok\u2069";
const ERROR_SHOWN = "refused\\u0007 line\\u007f\\u009b2J\\u001b[2J\\u2067ok\\u2069";
const PLAIN = "plain-01";
/** One command that takes longer fails the test. */
const COMMAND_MS = 20_000;

/**
 * The control characters in `text` but the line feed and the tab (those between the lines and
 * cells of tab-separated values; the number of cells of a row is checked), as hex codes.
 */
const controlsIn = (text: string): string[] => rawControlsIn(text, [0x0a, 0x09]);

/** A stand-in for the API: a token, the devices EVIL and PLAIN, no resources on either. */
async function fakeApi(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://api").pathname);
    const answer = (body: unknown) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method === "POST" && path === "/create_token") {
      answer({ token: "control-chars-test-token", expires_in: 3600 });
    } else if (path === "/devices") {
      answer({ device_ids: [EVIL, PLAIN] });
    } else if (path.endsWith("/resources")) {
      answer({ device_id: path.slice(1, -"/resources".length), resource_ids: [] });
    } else {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "not found" }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("control characters from the API and the state DB never reach stdout as they are", () => {
  let api: Awaited<ReturnType<typeof fakeApi>>;
  let env: Record<string, string>;
  const stateDb = tempStateDb();

  beforeAll(async () => {
    api = await fakeApi();
    env = {
      ENERGY_API_URL: api.url,
      ENERGY_API_KEY: "control-chars-test-key",
      ENERGY_API_USER: "control-chars-test-user",
      ENERGY_API_PASSWORD: "control-chars-test-password",
      STATE_DB: stateDb,
      OUTPUT_FILE: join(tempDir("control-chars-"), "out.lp"),
      LOG_LEVEL: "info",
      LOG_FORMAT: "json",
    };
  });
  afterAll(() => api.close());
  afterEach(killCliChildren);

  async function child(...args: string[]) {
    const cli = spawnCli(args, env);
    const { code } = await cli.wait(COMMAND_MS, `energy-etl ${args.join(" ")}`);
    return { code, out: cli.stdout(), err: cli.stderr() };
  }

  it("devices: one row per device, the id escaped", async () => {
    const { code, out, err } = await child("devices");
    expect({ code, err }).toEqual({ code: 0, err: "" });
    expect(controlsIn(out)).toEqual([]);
    expect(out).toBe(`device_id\n${SHOWN}\n${PLAIN}\n2 devices\n`);
  });

  it("sync: a summary line per device, no line of the id's own; log lines hold none either", async () => {
    const { code, out, err } = await child("sync");
    expect(code).toBe(0);
    expect(controlsIn(out)).toEqual([]);
    const lines = out.trimEnd().split("\n");
    // a line per device (in the order they finished), then the run's
    expect(lines).toHaveLength(3);
    expect(lines.slice(0, 2).sort()).toEqual([
      `${SHOWN}: 0 points in 0 requests`,
      `${PLAIN}: 0 points in 0 requests`,
    ]);
    expect(lines[2]).toMatch(/^sync ok: 2 devices, 0 points, /);
    // the JSON log lines on stderr: JSON escapes, the id whole once parsed
    expect(controlsIn(err)).toEqual([]);
    expect(err).toContain(SHOWN);
  });

  it("status and dead-letters: cursors, jobs and dead letters of the device escaped", async () => {
    const store = StateStore.open(stateDb);
    const now = new Date("2026-03-01T00:00:00Z");
    try {
      store.cursors.begin(EVIL, "all_data", Date.parse("2026-02-01T00:00:00Z") / 1000, now);
      store.deadLetters.add(
        {
          kind: "row",
          deviceId: EVIL,
          resourceId: "all_data",
          windowFromS: Date.parse("2026-02-01T00:00:00Z") / 1000,
          windowToS: Date.parse("2026-02-01T01:00:00Z") / 1000,
          valueIds: ["e_00_00_03_001_operating_mode"],
          payload: '{"timestamp":"2026-02-01T00:00:00Z","x":"\u001b[2J"}',
          error: EVIL_ERROR,
        },
        now,
      );
    } finally {
      store.close();
    }
    const status = await child("status");
    expect(status.code).toBe(0);
    expect(controlsIn(status.out)).toEqual([]);
    const [head, cursorRow] = status.out.split("\n");
    expect(head?.split("\t")).toHaveLength(6);
    expect(cursorRow?.split("\t")).toEqual([
      SHOWN,
      "all_data",
      "none yet",
      expect.any(String),
      expect.any(String),
      "1",
    ]);
    const letters = await child("dead-letters", "--list");
    expect(letters.code).toBe(0);
    expect(controlsIn(letters.out)).toEqual([]);
    // id, kind, device, resource, window, seen, error, payload: the head and one row
    const [lettersHead, row, ...rest] = letters.out.split("\n");
    expect(lettersHead?.split("\t")).toHaveLength(8);
    expect(row?.split("\t")).toEqual([
      expect.stringMatching(/^\d+$/),
      "row",
      SHOWN,
      "all_data",
      "2026-02-01T00:00 .. 2026-02-01T01:00",
      "1",
      ERROR_SHOWN,
      '{"timestamp":"2026-02-01T00:00:00Z","x":"\\u001b[2J"}',
    ]);
    expect(rest.join("\n")).toMatch(/^1 of 1 dead letter /);
    const id = row?.split("\t")[0] ?? "";
    const shown = await child("dead-letters", "show", id);
    expect(shown.code).toBe(0);
    expect(controlsIn(shown.out)).toEqual([]);
    expect(shown.out).toContain(`dead letter ${id}: row of ${SHOWN} / all_data\n`);
    expect(shown.out).toContain(`error:    ${ERROR_SHOWN}\n`);
  });

  it("on a terminal (in-process): the tables hold the escaped id, no control character", async () => {
    for (const argv of [["devices"], ["status"], ["dead-letters"]]) {
      const io = bufferIo(env);
      asTerminal(io.stdout, 200);
      expect(await runCli(argv, io)).toBe(0);
      expect(controlsIn(io.out())).toEqual([]);
      expect(io.out()).toContain(argv[0] === "dead-letters" ? "evil\\r\\nsync" : SHOWN);
    }
  });
});
