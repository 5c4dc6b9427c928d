import { forgetSecret, registerSecret } from "../logger.js";
import { type AccessToken, type Renewal, TokenProvider } from "./token-provider.js";

/** What the API needs to know who is asking (spec 5). */
export interface ApiCredentials {
  readonly apiKey: string;
  readonly user: string;
  readonly password: string;
}

/** How a request authenticates: the access token, or a header of its own (spec 5). */
export type RequestAuth = "bearer" | { readonly authorization: string };

/** Access tokens kept registered as secrets (the newest ones). */
const KEPT_TOKEN_SECRETS = 8;

/**
 * The API's authentication (spec 5): the credentials, registered as secrets the moment they are
 * known (the password, the API key, and the Basic credential `user:password`, with their Base64
 * forms), the headers of each kind of request, and the access token's lifecycle: one token kept,
 * renewed before it expires or after a refusal, single flight; each new token registered as a
 * secret and the one {@link KEPT_TOKEN_SECRETS} renewals back forgotten.
 */
export class ApiAuth {
  /** `Basic <base64 of user:password>` (POST /create_token). */
  readonly basicAuthorization: string;
  private readonly tokens: TokenProvider;
  private readonly recentTokens: string[] = [];

  /**
   * @param obtain POST /create_token; `slotHeld` as {@link refresh} was given it
   * @param now clock in epoch ms
   */
  constructor(
    private readonly credentials: ApiCredentials,
    obtain: (slotHeld: boolean) => Promise<AccessToken>,
    now: () => number,
  ) {
    registerSecret(credentials.apiKey);
    if (credentials.password !== "") {
      registerSecret(credentials.password);
      registerSecret(`${credentials.user}:${credentials.password}`);
    }
    const basic = Buffer.from(`${credentials.user}:${credentials.password}`).toString("base64");
    this.basicAuthorization = `Basic ${basic}`;
    this.tokens = new TokenProvider(obtain, now);
  }

  /** The headers of an attempt: the access token, or `auth`'s header with the API key. */
  headersFor(auth: RequestAuth, token: string | undefined): Record<string, string> {
    return auth === "bearer"
      ? { authorization: `Bearer ${token ?? ""}` }
      : { authorization: auth.authorization, "x-api-key": this.credentials.apiKey };
  }

  /** A valid access token, obtained or renewed as needed. */
  token(): Promise<string> {
    return this.tokens.get();
  }

  /** The current token if it is valid for a while yet, else undefined. */
  currentToken(): string | undefined {
    return this.tokens.peek();
  }

  /** Renews the token, or joins the renewal under way (see {@link TokenProvider.refresh}). */
  refresh(slotHeld: boolean): Renewal {
    return this.tokens.refresh(slotHeld);
  }

  /** Drops a token the server refused, so that the next request renews it. */
  refused(token: string): void {
    this.tokens.invalidate(token);
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
