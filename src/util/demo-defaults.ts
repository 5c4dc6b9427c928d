/** The demo's credentials and the simulator's defaults: here so that the ETL needs nothing of it. */

export interface SimUser {
  readonly user: string;
  readonly otp?: string;
  readonly password?: string;
}

export const DEFAULT_SIM_API_KEY = "sim-api-key";

export const DEFAULT_SIM_USERS: readonly SimUser[] = [
  { user: "demo", password: "demo-password", otp: "123456" },
];

/** Share of generated devices that get a new value when the fleet options do not say. */
export const DEFAULT_NEW_VALUE_SHARE = 0.02;

/** Unrequested members per row when `extraMembers` is not set. */
export const DEFAULT_EXTRA_MEMBERS = 3;
