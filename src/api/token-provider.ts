/** An access token and when it must be renewed (before its expiry). */
export interface AccessToken {
  readonly token: string;
  readonly renewAtMs: number;
}

/** Renew this long before expiry: 60 s, or a tenth of the validity for short-lived tokens. */
export function renewalMarginMs(expiresInS: number): number {
  return Math.min(60_000, (expiresInS * 1000) / 10);
}

/** A renewal as {@link TokenProvider.refresh} hands it out. */
export interface Renewal {
  /** The new token. */
  readonly token: Promise<string>;
  /** True when this call started the renewal; false when it joined one already under way. */
  readonly started: boolean;
}

/**
 * Keeps one access token in memory (spec 5.2) and renews it before it expires, or when a request
 * was refused with it. Concurrent callers share a single renewal (single flight).
 */
export class TokenProvider {
  private current: AccessToken | undefined;
  private renewal: Promise<AccessToken> | undefined;

  /**
   * @param obtain fetches a new token (POST /create_token); `slotHeld` is passed on from
   *   {@link refresh}: the caller holds a rate-gate slot that the renewal may use
   * @param now clock in epoch ms (injected for tests)
   */
  constructor(
    private readonly obtain: (slotHeld: boolean) => Promise<AccessToken>,
    private readonly now: () => number = Date.now,
  ) {}

  /** A token that is valid for a while yet; renews it when it is about to expire. */
  async get(): Promise<string> {
    return this.peek() ?? (await this.refresh(false).token);
  }

  /** The current token if it is valid for a while yet (before its renewal time), else undefined. */
  peek(): string | undefined {
    const current = this.current;
    return current && this.now() < current.renewAtMs ? current.token : undefined;
  }

  /**
   * Renews the token, or joins the renewal under way (single flight). `slotHeld`: the caller holds
   * a rate-gate slot, which the renewal it starts may use instead of waiting for one.
   */
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

  /**
   * Drops `token` after the server refused it, so that the next get() renews. A token that was
   * already replaced (another caller renewed meanwhile) is ignored.
   */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }
}
