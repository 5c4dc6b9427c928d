import { apiClientSettings, ConfigError, loadConfig, requireApi } from "../../src/config.js";

describe("requireApi", () => {
  it("names each missing connection setting with its path and flag, in order", () => {
    const config = loadConfig({ env: { ENERGY_API_USER: "u" } });
    expect(() => requireApi(config)).toThrow(
      new ConfigError(
        "not configured: ENERGY_API_URL (api.url, --api-url), ENERGY_API_KEY (api.key), " +
          "ENERGY_API_PASSWORD (api.password)",
      ),
    );
  });

  it("returns the four connection settings when all are set", () => {
    const env = {
      ENERGY_API_URL: "http://127.0.0.1:9/v1",
      ENERGY_API_KEY: "k",
      ENERGY_API_USER: "u",
      ENERGY_API_PASSWORD: "p",
    };
    expect(requireApi(loadConfig({ env }))).toEqual({
      url: "http://127.0.0.1:9/v1",
      key: "k",
      user: "u",
      password: "p",
    });
    const settings = apiClientSettings(
      loadConfig({ env: { ...env, API_RETRY_AFTER_MAX: "PT2M" } }),
    );
    expect(settings).toMatchObject({
      baseUrl: "http://127.0.0.1:9/v1",
      retryAfterMaxMs: 120_000,
      retry: { retries: 5, baseDelayMs: 500, maxDelayMs: 30_000 },
      dataLimits: { maxRecordBytes: 1024 * 1024, maxAnswerBytes: 512 * 1024 * 1024 },
    });
  });
});
