import { spawn } from "node:child_process";
import { once } from "node:events";
import got from "got";

describe("energy-etl simulate", () => {
  it("prints the base URL and credentials that work, and stops on SIGTERM", async () => {
    const child = spawn(
      process.execPath,
      ["dist/cli.js", "simulate", "--port", "0", "--seed", "3"],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const complete = /devices: .*\n/.test(out);
        const m = /ENERGY_API_URL=(\S+)/.exec(out);
        if (complete && m?.[1]) resolve(m[1]);
      });
      child.once("exit", () => reject(new Error(`simulator exited early: ${out}`)));
    });
    const env = Object.fromEntries(
      [...out.matchAll(/^\s+(ENERGY_API_\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]),
    ) as Record<string, string>;
    expect(env.ENERGY_API_KEY).toBeTruthy();
    const token = await got
      .post(`${url}/create_token`, {
        headers: {
          "x-api-key": env.ENERGY_API_KEY,
          authorization: `Basic ${Buffer.from(`${env.ENERGY_API_USER}:${env.ENERGY_API_PASSWORD}`).toString("base64")}`,
        },
      })
      .json<{ token: string }>();
    expect(token.token).toBeTruthy();
    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
  });
});
