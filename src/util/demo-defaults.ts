/**
 * The demo's credentials: what the simulator accepts unless told otherwise, and what `energy-etl
 * doctor` warns about; and the simulator's defaults `simulate --help` shows. Here, not in
 * src/simulator, so that the ETL's code (and `--help`) needs nothing from it.
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

/** Share of generated devices that get a new value when the fleet options do not say. */
export const DEFAULT_NEW_VALUE_SHARE = 0.02;

/** Unrequested members per row when `extraMembers` is not set. */
export const DEFAULT_EXTRA_MEMBERS = 3;
