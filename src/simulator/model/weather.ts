/** Site weather: sun position, cloud cover, irradiance, temperature, wind and rain. */
import { cos, floor, max, min, PI, sin, sqrt } from "./num.js";
import { smoothNoise, subKey, unit2, unit3 } from "./rng.js";
import { DAY_S, dayOfYear } from "./time.js";

export type WeatherKeys = ReturnType<typeof weatherKeys>;

export function weatherKeys(deviceKey: number) {
  return {
    cloud: subKey(deviceKey, "weather.cloud"),
    cloudFast: subKey(deviceKey, "weather.cloud.fast"),
    cloudSlow: subKey(deviceKey, "weather.cloud.slow"),
    temp: subKey(deviceKey, "weather.temp"),
    wind: subKey(deviceKey, "weather.wind"),
    windDir: subKey(deviceKey, "weather.wind.dir"),
    rain: subKey(deviceKey, "weather.rain"),
  };
}

/** Cloudiness of a UTC day in [0, 0.95]: mostly clear days, some partly cloudy, a few overcast. */
export function dayCloudiness(keys: WeatherKeys, day: number): number {
  const u = 0.7 * unit2(keys.cloud, day) + 0.3 * unit2(keys.cloud, day - 1);
  if (u < 0.45) return u * 0.33;
  if (u < 0.75) return 0.15 + (u - 0.45) * 1.5;
  return min(0.95, 0.6 + (u - 0.75) * 1.4);
}

/** Sunrise and sunset in UTC hours for a site whose solar noon is at `noonUtcH`. */
export interface SunWindow {
  readonly riseH: number;
  readonly setH: number;
  /** Clear-sky irradiance at solar noon, W/m². */
  readonly peakWm2: number;
  readonly doy: number;
}

/** The sun's day window at time t (season from the day of the year). */
export function sunWindow(t: number, noonUtcH: number): SunWindow {
  const doy = dayOfYear(t);
  const lengthH = 12.2 + 1.0 * sin((2 * PI * (doy - 80)) / 365.25);
  const peakWm2 = 1000 * (0.93 + 0.07 * cos((2 * PI * (doy - 172)) / 365.25));
  return { riseH: noonUtcH - lengthH / 2, setH: noonUtcH + lengthH / 2, peakWm2, doy };
}

/** Irradiance (W/m², with passing clouds) and air temperature (°C) at t under `cloudiness`. */
export function skyAndAir(
  keys: WeatherKeys,
  sun: SunWindow,
  t: number,
  h: number,
  cloudiness: number,
): { irradianceWm2: number; ambientC: number } {
  let irradianceWm2 = 0;
  if (h > sun.riseH && h < sun.setH) {
    const s = sin((PI * (h - sun.riseH)) / (sun.setH - sun.riseH));
    const elevation = s * sqrt(sqrt(s)); // clear-sky fraction of the noon irradiance
    const passing =
      0.65 * smoothNoise(keys.cloudFast, t, 600) + 0.35 * smoothNoise(keys.cloudSlow, t, 5400);
    const attenuation = max(0.04, 1 - cloudiness * (0.3 + 0.7 * passing));
    irradianceWm2 = sun.peakWm2 * elevation * attenuation;
  }
  const seasonal = 22 + 6 * cos((2 * PI * (sun.doy - 200)) / 365.25);
  const swing = 6.5 * (1 - 0.55 * cloudiness) * sin((2 * PI * (h - 9)) / 24);
  const drift = 4 * (smoothNoise(keys.temp, t, 2 * DAY_S) - 0.5);
  return { irradianceWm2, ambientC: seasonal + swing + drift - 2 * cloudiness };
}

/** Wind speed in m/s (gusty, stronger on cloudy days). */
export function windSpeed(keys: WeatherKeys, t: number, cloudiness: number): number {
  const base = smoothNoise(keys.wind, t, 3 * 3600);
  const gust = smoothNoise(keys.wind ^ 0x1f2e3d4c, t, 300);
  return 0.4 + 5.5 * base ** 1.5 + 1.6 * gust + 2.5 * cloudiness;
}

/** Wind direction in degrees [0, 360), veering slowly. */
export function windDirection(keys: WeatherKeys, t: number): number {
  const slow = smoothNoise(keys.windDir, t, 1.5 * DAY_S) * 540;
  const jitter = 25 * (smoothNoise(keys.windDir ^ 0x51a2b3c4, t, 600) - 0.5);
  return (((slow + jitter) % 360) + 360) % 360;
}

/** Rain gauge pulses (0.2 mm each) during the sample interval ending at t. */
export function rainPulses(
  keys: WeatherKeys,
  t: number,
  cloudiness: number,
  resolutionS: number,
): number {
  if (cloudiness < 0.6) return 0;
  const shower = smoothNoise(keys.rain, t, 2400);
  const threshold = 1.35 - cloudiness;
  if (shower <= threshold) return 0;
  const intensityPerMin = ((shower - threshold) / (1 - threshold)) * 4;
  const expected = intensityPerMin * (resolutionS / 60);
  return floor(expected + unit3(keys.rain, floor(t), 7));
}
