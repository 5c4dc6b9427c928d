import {
  createLogger,
  forgetSecret,
  registerSecret,
  scrubSecrets,
  scrubText,
} from "../src/logger.js";
import { captureLogger } from "./support/log-capture.js";

const b64 = (s: string): string => Buffer.from(s).toString("base64");
const b64url = (s: string): string => Buffer.from(s).toString("base64url");

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

  it("redacts a secret shorter than 8 characters only where it stands whole", () => {
    const short = ["§", "#%", "~^~", "compone"];
    for (const secret of short) registerSecret(secret);
    try {
      const { logger, lines } = captureLogger("info");
      logger.info({ one: "a § b", two: "#%", three: "x~^~y", four: "component" }, "short ~^~ #%");
      logger.info({ header: `Basic ${b64("~^~")}`, url: `/x?pw=${encodeURIComponent("#%")}` }, "b");
      expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual([
        expect.objectContaining({
          one: "a § b",
          two: "[REDACTED]",
          three: "x~^~y",
          four: "component",
          msg: "short ~^~ #%",
        }),
        expect.objectContaining({ header: "Basic [REDACTED]", url: "/x?pw=[REDACTED]" }),
      ]);
      expect(scrubSecrets("a ~^~ b")).toBe("a ~^~ b");
      expect(scrubSecrets("~^~")).toBe("[REDACTED]");
      expect(scrubSecrets('{"compone":"compone","x":["~^~"]}')).toBe(
        '{"compone":"[REDACTED]","x":["[REDACTED]"]}',
      );
      expect(scrubSecrets("x-api-key: #%\nauthorization: Bearer compone")).toBe(
        "x-api-key: [REDACTED]\nauthorization: Bearer [REDACTED]",
      );
      expect(scrubSecrets("http://user:%23%25@host/")).toBe("http://user:[REDACTED]@host/");
    } finally {
      for (const secret of short) forgetSecret(secret);
    }
  });

  it("redacts a secret of 8 characters or more wherever it appears", () => {
    registerSecret("8-chars!");
    expect(scrubSecrets(`a8-chars!b, Basic ${b64("8-chars!")}`)).toBe(
      "a[REDACTED]b, Basic [REDACTED]",
    );
    forgetSecret("8-chars!");
  });

  it("redacts a Basic credential user:password registered as one value, in clear and Base64", () => {
    registerSecret("basic-user:pw1");
    const header = `Basic ${b64("basic-user:pw1")}`;
    expect(scrubSecrets(`{"authorization":"${header}"}`)).toBe(
      '{"authorization":"Basic [REDACTED]"}',
    );
    expect(scrubSecrets("login basic-user:pw1 refused")).toBe("login [REDACTED] refused");
    expect(scrubSecrets(`x ${b64url("basic-user:pw1")} y`)).toBe("x [REDACTED] y");
  });

  it("redacts the JSON-escaped forms of a secret with quotes and backslashes", () => {
    // 8 characters or more: looked for inside text (see the test of short ones above)
    const secret = 'q"uo\\te-long';
    registerSecret(secret);
    const once = JSON.stringify({ body: `echo ${secret}` });
    const twice = JSON.stringify({ msg: once });
    for (const text of [once, twice, JSON.stringify({ msg: twice })]) {
      const scrubbed = scrubSecrets(text);
      expect(scrubbed).not.toContain("uo");
      expect(scrubbed).toContain("[REDACTED]");
    }
    const { logger, lines } = captureLogger("info");
    logger.info({ body: once }, `upstream said ${once}`);
    expect(lines.join("\n")).not.toContain("uo");
  });

  it("replaces the whole of secrets that hold or overlap each other (longest first)", () => {
    registerSecret("inner-7c1");
    registerSecret("outer-inner-7c1-outer");
    expect(scrubSecrets("a outer-inner-7c1-outer b inner-7c1 c")).toBe(
      "a [REDACTED] b [REDACTED] c",
    );
    registerSecret("left-part-5e2");
    registerSecret("part-5e2-right");
    // neither holds the other: the whole stretch they cover goes
    expect(scrubSecrets("<left-part-5e2-right>")).toBe("<[REDACTED]>");
    expect(scrubSecrets("inner-7c1inner-7c1")).toBe("[REDACTED]");
  });

  it("scrubText scrubs, then cuts to maxChars with an ellipsis", () => {
    registerSecret("cut-secret-3f9d");
    expect(scrubText("short", 10)).toBe("short");
    expect(scrubText("0123456789abc", 10)).toBe("012345678…");
    expect(scrubText("0123456789abc", 10)).toHaveLength(10);
    // a secret across the cut is redacted, not half printed
    const cut = scrubText("xxxx cut-secret-3f9d yyyy", 12);
    expect(cut).toBe("xxxx [REDAC…");
    expect(scrubText("ab\u{1F600}cd", 4)).toBe("ab…");
    expect(scrubText("abc", 0)).toBe("");
  });

  it("takes any string as a secret, a lone surrogate too", () => {
    registerSecret("lone-\ud800-surrogate");
    expect(scrubSecrets("a lone-\ud800-surrogate b")).toBe("a [REDACTED] b");
  });

  it("forgets a secret that no longer matters", () => {
    registerSecret("expired-token-6a0b");
    expect(scrubSecrets("expired-token-6a0b")).toBe("[REDACTED]");
    forgetSecret("expired-token-6a0b");
    expect(scrubSecrets("expired-token-6a0b")).toBe("expired-token-6a0b");
  });

  it("honours the level", () => {
    const { lines, logger } = captureLogger("warn");
    logger.info("hidden");
    logger.warn("shown");
    expect(lines).toHaveLength(1);
    expect(createLogger("silent").isLevelEnabled("error")).toBe(false);
  });
});
