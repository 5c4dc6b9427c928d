/**
 * The `site` points: each device's site as configured (`sites` of the config file), written with
 * every run's report so that dashboards and Flux can join a device's name, group and peak power.
 */
import { type Sites, siteOf } from "../config/sites.js";
import { escapeTag, quoteString } from "../transform/line-protocol.js";

export const SITE_MEASUREMENT = "site";

const HOUR_S = 3600;

/**
 * One `site` line per device once any site is configured: tags `device_id`, `group`; fields `name`,
 * `kwp`. Stamped at the start of the UTC hour: an hour's runs overwrite one point (idempotent).
 */
export function siteLines(deviceIds: Iterable<string>, sites: Sites, nowS: number): string[] {
  // no sites configured: no site points at all (nothing to join)
  if (Object.keys(sites).length === 0) return [];
  const hourS = Math.floor(nowS / HOUR_S) * HOUR_S;
  return [...new Set(deviceIds)].map((deviceId) => {
    const site = siteOf(sites, deviceId);
    const group = site?.group === undefined ? "" : `,group=${escapeTag(site.group)}`;
    return (
      `${SITE_MEASUREMENT},device_id=${escapeTag(deviceId)}${group} ` +
      `kwp=${site?.kwp ?? 0},name=${quoteString(site?.name ?? deviceId)} ${hourS}`
    );
  });
}
