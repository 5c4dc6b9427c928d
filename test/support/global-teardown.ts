import type { TestInfluxd } from "./influxd.js";

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __influxd?: TestInfluxd }).__influxd?.stop();
}
