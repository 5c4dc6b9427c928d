import { forgetSecret, registerSecret } from "../logger.js";

/** What the API needs to know who is asking (spec 5). */
export interface ApiCredentials {
  readonly apiKey: string;
  readonly user: string;
  readonly password: string;
}

/** How a request authenticates: the access token, or a header of its own (spec 5). */
export type RequestAuth = "bearer" | { readonly authorization: string };

/** An access token and when it must be renewed (before its expiry). */
export interface AccessToken {
  readonly token: string;
  readonly renewAtMs: number;
}

/** A renewal as {@link ApiAuth.refresh} hands it out. */
export interface Renewal {
  readonly token: Promise<string>;
  /** True when this call started the renewal; false when it joined one already under way. */
  readonly started: boolean;
}

/** Renew this long before expiry: 60 s, or a tenth of the validity for short-lived tokens. */
export function renewalMarginMs(expiresInS: number): number {
  return Math.min(60_000, (expiresInS * 1000) / 10);
}

/** Access tokens kept registered as secrets (the newest ones). */
const KEPT_TOKEN_SECRETS = 8;

/**
 * The API's authentication (spec 5): the credentials, registered as secrets at once (with their
 * Base64 forms), the headers of each kind of request, and the one access token kept in memory:
 * renewed before it expires or after a refusal, single flight; each registered as a secret and
 * the one {@link KEPT_TOKEN_SECRETS} renewals back forgotten.
 */
export class ApiAuth {
  /** `Basic <base64 of user:password>` (POST /create_token). */
  readonly basicAuthorization: string;
  private current: AccessToken | undefined;
  private renewal: Promise<AccessToken> | undefined;
  private readonly recentTokens: string[] = [];

  /** `obtain`: POST /create_token (`slotHeld`: its caller's rate-gate slot); `now`: epoch ms. */
  constructor(
    private readonly credentials: ApiCredentials,
    private readonly obtain: (slotHeld: boolean) => Promise<AccessToken>,
    private readonly now: () => number,
  ) {
    registerSecret(credentials.apiKey);
    if (credentials.password !== "") {
      registerSecret(credentials.password);
      registerSecret(`${credentials.user}:${credentials.password}`);
    }
    const basic = Buffer.from(`${credentials.user}:${credentials.password}`).toString("base64");
    this.basicAuthorization = `Basic ${basic}`;
  }

  /** The headers of an attempt: the access token, or `auth`'s header with the API key. */
  headersFor(auth: RequestAuth, token: string | undefined): Record<string, string> {
    return auth === "bearer"
      ? { authorization: `Bearer ${token ?? ""}` }
      : { authorization: auth.authorization, "x-api-key": this.credentials.apiKey };
  }

  async token(): Promise<string> {
    return this.currentToken() ?? (await this.refresh(false).token);
  }

  /** The current token if it is valid for a while yet (before its renewal time), else undefined. */
  currentToken(): string | undefined {
    const current = this.current;
    return current && this.now() < current.renewAtMs ? current.token : undefined;
  }

  /** Renews the token, or joins the renewal under way; `slotHeld` goes to `obtain`. */
  refresh(slotHeld: boolean): Renewal {
    const started = this.renewal === undefined;
    this.renewal ??= this.obtain(slotHeld)
      .then((token) => {
        this.current = token;
        return token;
      })
      .finally(() => {
        this.renewal = undefined;
      });
    return { token: this.renewal.then((t) => t.token), started };
  }

  /** Drops a token the server refused (unless renewed since), so the next request renews it. */
  refused(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  /** Registers a new access token as a secret, forgetting the oldest one kept. */
  remember(token: string): void {
    registerSecret(token);
    this.recentTokens.push(token);
    if (this.recentTokens.length > KEPT_TOKEN_SECRETS) {
      const old = this.recentTokens.shift();
      if (old !== undefined && old !== token) forgetSecret(old);
    }
  }
}
