import { createLogger, registerSecret, scrubSecrets } from "../src/logger.js";
import { captureLogger } from "./support/log-capture.js";

describe("logger", () => {
  it("writes one JSON event per line with level, time and bindings", () => {
    const { logger, lines } = captureLogger("info");
    logger.child({ device: "site A+1", run: 7 }).info({ points: 3 }, "chunk written");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      level: "info",
      app: "energy-etl",
      device: "site A+1",
      run: 7,
      points: 3,
      msg: "chunk written",
    });
  });

  it("redacts secret fields wherever they sit", () => {
    const { logger, lines } = captureLogger("info");
    logger.info(
      {
        headers: { authorization: "Bearer abc.def", "x-api-key": "key-123" },
        request: { headers: { authorization: "Basic dXNlcjpwdw==" } },
        password: "pw-1",
        otp: "otp-1",
        token: "tok-1",
        options: { password: "pw-2", token: "tok-2" },
      },
      "request",
    );
    const line = lines.join("\n");
    for (const secret of [
      "abc.def",
      "key-123",
      "dXNlcjpwdw==",
      "pw-1",
      "otp-1",
      "tok-1",
      "pw-2",
      "tok-2",
    ]) {
      expect(line).not.toContain(secret);
    }
    expect(line).toContain("[REDACTED]");
  });

  it("scrubs registered secret values (and their Base64) from messages and any field", () => {
    registerSecret("Sup3r-Secret-Value");
    const { logger, lines } = captureLogger("info");
    logger.info({ detail: "echo Sup3r-Secret-Value" }, "failed with Sup3r-Secret-Value inside");
    logger.warn({ header: `Basic ${Buffer.from("Sup3r-Secret-Value").toString("base64")}` }, "x");
    expect(lines.join("\n")).not.toContain("Sup3r-Secret-Value");
    expect(lines.join("\n")).not.toContain(Buffer.from("Sup3r-Secret-Value").toString("base64"));
    expect(scrubSecrets('{"a":"Sup3r-Secret-Value"}')).toBe('{"a":"[REDACTED]"}');
  });

  it("honours the level", () => {
    const { lines, logger } = captureLogger("warn");
    logger.info("hidden");
    logger.warn("shown");
    expect(lines).toHaveLength(1);
    expect(createLogger("silent").isLevelEnabled("error")).toBe(false);
  });
});
