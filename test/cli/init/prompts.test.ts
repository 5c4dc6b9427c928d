import { checkValue, FIELDS } from "../../../src/cli/init/prompts.js";
import { UsageError } from "../../../src/cli/io.js";

describe("checkValue", () => {
  it.each([
    [FIELDS.apiUrl, "flag", "ftp://x", "--api-url must be an http(s) URL"],
    [FIELDS.apiUrl, "setting", "ftp://x", "ENERGY_API_URL must be an http(s) URL"],
    [FIELDS.apiUrl, "prompt", "ftp://x", "the API URL must be an http(s) URL"],
    [FIELDS.apiKey, "flag", "", "ENERGY_API_KEY must not be empty"],
    [FIELDS.password, "setting", "a'b", "ENERGY_API_PASSWORD must not hold ' or \\"],
    [FIELDS.user, "prompt", "a\nb", "the API user must not hold line breaks"],
    [FIELDS.otp, "setting", "", "ENERGY_API_OTP must not be empty"],
  ] as const)("%#: names where a bad value came from", (field, origin, value, message) => {
    expect(() => checkValue(field, value, origin)).toThrow(UsageError);
    expect(() => checkValue(field, value, origin)).toThrow(message);
  });

  it("trims what a header or URL would not carry, and keeps a password as typed", () => {
    expect(checkValue(FIELDS.apiKey, "  k-1 ", "setting")).toBe("k-1");
    expect(checkValue(FIELDS.apiUrl, " http://h:1/v1 ", "flag")).toBe("http://h:1/v1");
    expect(checkValue(FIELDS.password, " pw ", "setting")).toBe(" pw ");
    expect(checkValue(FIELDS.otp, "o'k\\", "setting")).toBe("o'k\\");
  });
});
