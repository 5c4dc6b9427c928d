/**
 * The demo's credentials: what the simulator accepts unless told otherwise, and what `energy-etl
 * doctor` warns about. Here, not in src/simulator, so that the ETL's code needs nothing from it.
 */

/** A user of the simulator: a one-time password to set a password with, or a password already set. */
export interface SimUser {
  readonly user: string;
  readonly otp?: string;
  readonly password?: string;
}

/** The simulator's API key unless one is given. */
export const DEFAULT_SIM_API_KEY = "sim-api-key";

/** The simulator's users unless others are given. */
export const DEFAULT_SIM_USERS: readonly SimUser[] = [
  { user: "demo", password: "demo-password", otp: "123456" },
];
