import type { Config } from "../../config.js";
import { DEFAULT_SIM_API_KEY, DEFAULT_SIM_USERS } from "../../util/demo-defaults.js";
import { type CheckResult, ok, warning } from "./check.js";

/** The InfluxDB token of docker-compose.yml's demo (`${INFLUX_TOKEN:-change-me-demo-token}`). */
export const DEMO_INFLUX_TOKEN = "change-me-demo-token";

const SIMULATOR_PORT = "8099";
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

const LIVE = "fine for the demo; change before going live";

/** True when `url` is the demo simulator: port 8099 on this host, or compose's `simulator`. */
function isSimulatorUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const { hostname, port } = new URL(url);
  return hostname === "simulator" || (LOOPBACK.has(hostname) && port === SIMULATOR_PORT);
}

/** A warning for each setting still at the demo's value (never showing a secret's value). */
export function demoChecks(config: Config): CheckResult[] {
  const { api, influx } = config;
  const found: CheckResult[] = [];
  const demo = (setting: string, detail: string, fix: string) =>
    found.push(warning(`demo default ${setting}`, detail, `${LIVE}: ${fix}`));
  if (isSimulatorUrl(api.url)) {
    demo(
      "ENERGY_API_URL",
      `${api.url} is the demo simulator`,
      "set ENERGY_API_URL to the base URL of the Energy Monitoring Data API",
    );
  }
  if (api.key === DEFAULT_SIM_API_KEY) {
    demo(
      "ENERGY_API_KEY",
      "the simulator's demo API key is set",
      "set ENERGY_API_KEY to your API key",
    );
  }
  if (DEFAULT_SIM_USERS.some((u) => u.password !== undefined && u.password === api.password)) {
    demo(
      "ENERGY_API_PASSWORD",
      "the simulator's demo password is set",
      "set ENERGY_API_PASSWORD to your account's password (energy-etl set-password on a first start)",
    );
  }
  if (influx.token === DEMO_INFLUX_TOKEN) {
    demo(
      "INFLUX_TOKEN",
      "the demo InfluxDB token of docker-compose.yml is set",
      "set INFLUX_TOKEN to a token of your InfluxDB that reads and writes its buckets",
    );
  }
  return found.length > 0 ? found : [ok("demo defaults", "none in use")];
}
