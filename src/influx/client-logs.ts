import { setLogger } from "@influxdata/influxdb-client";
import type { Logger } from "pino";

let clientLogsRouted = false;

/** Sends the client library's own messages to pino (at debug) instead of the console. */
export function routeClientLogs(logger: Logger): void {
  if (clientLogsRouted) return;
  clientLogsRouted = true;
  const log = logger.child({ component: "influxdb-client" });
  setLogger({
    error: (message: string) => log.debug(message),
    warn: (message: string) => log.debug(message),
  });
}
