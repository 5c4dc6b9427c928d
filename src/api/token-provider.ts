/** An access token and when it must be renewed (before its expiry). */
export interface AccessToken {
  readonly token: string;
  readonly renewAtMs: number;
}

/** Renew this long before expiry: 60 s, or a tenth of the validity for short-lived tokens. */
export function renewalMarginMs(expiresInS: number): number {
  return Math.min(60_000, (expiresInS * 1000) / 10);
}

/**
 * Keeps one access token in memory (spec 5.2) and renews it before it expires, or when a request
 * was refused with it. Concurrent callers share a single renewal (single flight).
 */
export class TokenProvider {
  private current: AccessToken | undefined;
  private renewal: Promise<AccessToken> | undefined;

  /**
   * @param obtain fetches a new token (POST /create_token)
   * @param now clock in epoch ms (injected for tests)
   */
  constructor(
    private readonly obtain: () => Promise<AccessToken>,
    private readonly now: () => number = Date.now,
  ) {}

  /** A token that is valid for a while yet; renews it when it is about to expire. */
  async get(): Promise<string> {
    const current = this.current;
    if (current && this.now() < current.renewAtMs) return current.token;
    return (await this.renew()).token;
  }

  /**
   * Drops `token` after the server refused it, so that the next get() renews. A token that was
   * already replaced (another caller renewed meanwhile) is ignored.
   */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private renew(): Promise<AccessToken> {
    this.renewal ??= this.obtain()
      .then((token) => {
        this.current = token;
        return token;
      })
      .finally(() => {
        this.renewal = undefined;
      });
    return this.renewal;
  }
}
