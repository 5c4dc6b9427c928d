import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { ApiClient } from "../../src/api/api-client.js";
import { askHidden } from "../../src/cli/prompt.js";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { answerToken, closeHostileServers, hostileServer } from "../api/hostile-server.js";
import { bufferIo } from "../support/cli-io.js";
import { captureLogger } from "../support/log-capture.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

describe("set-password", () => {
  let sim: Simulator;
  beforeEach(async () => {
    sim = await startTestSimulator({ users: [{ user: "ops", otp: "otp-4711" }] });
  });
  afterEach(() => sim.close());

  const baseEnv = () => ({
    ENERGY_API_URL: sim.url,
    ENERGY_API_KEY: sim.apiKey,
    LOG_LEVEL: "debug",
  });

  it("sets the password from the environment; the new password then obtains a token", async () => {
    const io = bufferIo({
      ...baseEnv(),
      ENERGY_API_OTP: "otp-4711",
      ENERGY_API_PASSWORD: "Pa55-word!",
    });
    const code = await runCli(["set-password", "--user", "ops"], io);
    expect(io.err()).not.toContain("otp-4711");
    expect(io.err()).not.toContain("Pa55-word!");
    expect(code).toBe(0);
    // says where the new password came from (#42), never the password
    expect(io.out()).toBe(
      "Password set for ops: the new password is ENERGY_API_PASSWORD of the environment (not " +
        "asked for), which energy-etl goes on reading.\n",
    );

    const check = bufferIo({
      ...baseEnv(),
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: "Pa55-word!",
    });
    expect(await runCli(["devices", "--json"], check)).toBe(0);
  });

  it("takes the user, the one-time password and the password from the .env file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "energy-etl-set-password-"));
    try {
      writeFileSync(
        join(dir, ".env"),
        "ENERGY_API_USER=ops\nENERGY_API_OTP=otp-4711\nENERGY_API_PASSWORD='x-Pa55'\n",
      );
      const io = bufferIo(baseEnv(), dir);
      expect(await runCli(["set-password"], io)).toBe(0);
      expect(io.out()).toBe(
        "Password set for ops: the new password is ENERGY_API_PASSWORD of .env file ./.env (not " +
          "asked for), which energy-etl goes on reading.\n",
      );
      expect(io.out()).not.toContain("x-Pa55");
      expect(sim.count("set_password", 200)).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ["--otp", "ENERGY_API_OTP"],
    ["--password", "ENERGY_API_PASSWORD"],
  ])(
    "%s is refused in one line saying where the secret goes; nothing is sent",
    async (flag, env) => {
      const io = bufferIo({
        ...baseEnv(),
        ENERGY_API_OTP: "otp-4711",
        ENERGY_API_PASSWORD: "x-Pa55",
      });
      expect(await runCli(["set-password", "-u", "ops", flag, "flag-secret-8e1b"], io)).toBe(2);
      expect(io.err()).toBe(
        `energy-etl: error: ${flag} is not taken: a secret on the command line shows in the ` +
          `shell history and in ps. Set ${env} in the environment or the .env file, or leave it ` +
          "out and set-password asks on a terminal\n",
      );
      expect(sim.count("set_password")).toBe(0);
    },
  );

  it("a new password typed at the prompt: says so, and where to put it", async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
    const io = { ...bufferIo({ ...baseEnv(), ENERGY_API_OTP: "otp-4711" }), stdin };
    const done = runCli(["set-password", "--user", "ops"], io);
    // each answer once its question is asked: a prompt takes the line it is asked for
    await waitUntil(() => io.err().endsWith("New password: "), "the first question", {
      timeoutMs: 10_000,
    });
    stdin.write("Typed-Pa55\r");
    await waitUntil(() => io.err().endsWith("Repeat new password: "), "the second question", {
      timeoutMs: 10_000,
    });
    stdin.write("Typed-Pa55\r");
    expect(await done).toBe(0);
    expect(io.out()).toBe(
      "Password set for ops: the new password is the one typed at the prompt; put it in " +
        "ENERGY_API_PASSWORD for energy-etl.\n",
    );
    expect(`${io.out()}${io.err()}`).not.toContain("Typed-Pa55");
    expect(sim.count("set_password", 200)).toBe(1);
  });

  it("a wrong one-time password: exit 1, advice about the one-time password only, not echoed", async () => {
    const io = bufferIo({
      ...baseEnv(),
      ENERGY_API_OTP: "wrong-otp-value",
      ENERGY_API_PASSWORD: "pw-value-1",
    });
    const code = await runCli(["set-password", "-u", "ops"], io);
    expect(code).toBe(1);
    expect(io.err()).toBe(
      "energy-etl: error: API auth_failed: POST /set_password refused the credentials (HTTP " +
        "401): invalid one-time password. The API refused the one-time password: it is wrong, " +
        "expired or already used (it works once). Ask for a new one and run set-password again " +
        "with it (ENERGY_API_OTP or the prompt).\n",
    );
    expect(io.err()).not.toContain("wrong-otp-value");
    expect(io.err()).not.toContain("pw-value-1");
    expect(sim.count("set_password")).toBe(1);
  });

  it("off a terminal, without ENERGY_API_OTP, says where it goes", async () => {
    const io = bufferIo(baseEnv());
    expect(await runCli(["set-password", "-u", "ops"], io)).toBe(2);
    expect(io.err()).toBe(
      "energy-etl: error: one-time password needed: not on a terminal, so set ENERGY_API_OTP " +
        "in the environment or the .env file\n",
    );
  });
});

describe("set-password is never sent twice", () => {
  afterEach(closeHostileServers);

  const run = (url: string, extra: Record<string, string> = {}) => {
    const io = bufferIo({
      ENERGY_API_URL: url,
      ENERGY_API_KEY: "set-password-key",
      API_RETRY_BASE_DELAY_MS: "1",
      ENERGY_API_OTP: "otp-once-1",
      ENERGY_API_PASSWORD: "New-Pa55",
      ...extra,
    });
    const argv = ["set-password", "-u", "ops"];
    return { io, code: runCli(argv, io) };
  };

  it("a 502 from the API: exactly one request, and the error says what to do", async () => {
    const server = await hostileServer((_req, res) => {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end("Bad Gateway");
    });
    const { io, code } = run(server.url);
    expect(await code).toBe(1);
    expect(server.paths).toEqual(["/set_password"]);
    expect(io.err()).toContain("POST /set_password failed on the server (HTTP 502)");
    expect(io.err()).toContain(
      "The one-time password may already be used: try the new password " +
        "(ENERGY_API_PASSWORD=<new password> energy-etl devices); if it is refused, ask for a " +
        "new one-time password.",
    );
    expect(io.err()).not.toContain("New-Pa55");
  });

  it("no answer within API_TIMEOUT_MS: one request, the same advice", async () => {
    const server = await hostileServer(() => {
      // never answers
    });
    const { io, code } = run(server.url, { API_TIMEOUT_MS: "200" });
    expect(await code).toBe(1);
    expect(server.paths).toEqual(["/set_password"]);
    expect(io.err()).toMatch(/timed out.*The one-time password may already be used/);
  });

  it("a refused connection (nothing sent) is retried", async () => {
    const port = await freePort();
    const sleeps: number[] = [];
    let answered = 0;
    const client = new ApiClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: "set-password-key",
      user: "ops",
      password: "New-Pa55",
      timeoutMs: 2_000,
      retry: { retries: 3, baseDelayMs: 1, maxDelayMs: 1 },
      logger: captureLogger().logger,
      sleep: async (ms) => {
        sleeps.push(ms);
        // the API comes up while the client waits to retry
        const server = await hostileServer((_req, res, path) => {
          answered++;
          if (path === "/create_token") return answerToken(res, "unused-token");
          res.writeHead(200, { "content-type": "application/json" });
          res.end('{"message":"password set"}');
        }, port);
        expect(server.url).toContain(String(port));
      },
    });
    await client.setPassword("ops", "otp-once-1", "New-Pa55");
    expect(sleeps).toHaveLength(1);
    expect(answered).toBe(1);
  });
});

/** A loopback port nobody listens on (connections to it are refused). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("askHidden", () => {
  it("reads until Enter without echoing, honouring Backspace", async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, rawModes: [] as boolean[] });
    const io = bufferIo();
    const rawModes: boolean[] = [];
    const ttyIo = {
      ...io,
      stdin: Object.assign(stdin, { setRawMode: (raw: boolean) => rawModes.push(raw) }),
    };
    const answer = askHidden(ttyIo, "Secret: ");
    stdin.write("s3cx\u007fret\r");
    await expect(answer).resolves.toBe("s3cret");
    expect(io.err()).toBe("Secret: \n");
    expect(rawModes).toEqual([true, false]);
  });

  it("Ctrl-C cancels", async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
    const answer = askHidden({ ...bufferIo(), stdin }, "Secret: ");
    stdin.write("ab\u0003");
    await expect(answer).rejects.toThrow("cancelled");
  });
});
