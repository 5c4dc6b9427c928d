import type { Logger } from "pino";
import { ApiClient, type ApiClientOptions } from "../../src/api/api-client.js";
import {
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../../src/simulator/server.js";
import { captureLogger } from "./log-capture.js";

/** A clock that tests move by hand. */
export class ManualClock {
  constructor(public nowMs: number) {}
  readonly now = (): number => this.nowMs;
  advance(ms: number): void {
    this.nowMs += ms;
  }
}

/** Starts a simulator on a free loopback port; close it in afterEach/afterAll. */
export function startTestSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  return startSimulator({ host: "127.0.0.1", port: 0, ...options });
}

/** An API client for the simulator with the demo credentials and fast retries. */
export function clientFor(
  simulator: Simulator,
  overrides: Partial<ApiClientOptions> = {},
): { client: ApiClient; lines: string[]; logger: Logger } {
  const { logger, lines } = captureLogger();
  const client = new ApiClient({
    baseUrl: simulator.url,
    apiKey: simulator.apiKey,
    user: "demo",
    password: "demo-password",
    timeoutMs: 2_000,
    retry: { retries: 3, baseDelayMs: 5, maxDelayMs: 20 },
    logger,
    ...overrides,
  });
  return { client, lines, logger };
}
