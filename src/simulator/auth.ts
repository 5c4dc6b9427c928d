/** The simulator's auth (spec 5): API key, one-time passwords, access tokens and their expiry. */
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { z } from "zod";
import type { SimUser } from "../util/demo-defaults.js";
import { type Answer, fail, json, jsonOrUndefined } from "./http.js";

const setPasswordBody = z.object({ user: z.string().min(1), pw: z.string().min(1) });

const SCHEMES = { Bearer: /^Bearer (.+)$/, Basic: /^Basic (.+)$/ } as const;

/** The value of an `Authorization: <scheme> <value>` header; undefined without one. */
function authValue(req: IncomingMessage, scheme: keyof typeof SCHEMES): string | undefined {
  return SCHEMES[scheme].exec(req.headers.authorization ?? "")?.[1];
}

/** The value of an `Authorization: <scheme> <base64>` header, decoded; undefined without one. */
function decodedAuth(req: IncomingMessage, scheme: keyof typeof SCHEMES): string | undefined {
  const value = authValue(req, scheme);
  return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
}

export class SimAuth {
  private readonly users = new Map<string, { otp?: string; password?: string }>();
  private readonly tokens = new Map<string, number>();
  private readonly issued: string[] = [];

  /** `now`: the simulator's clock in epoch ms. */
  constructor(
    private readonly apiKey: string,
    users: readonly SimUser[],
    private readonly now: () => number,
  ) {
    for (const u of users) this.users.set(u.user, { otp: u.otp, password: u.password });
  }

  /** Oldest first, expired and revoked ones too. */
  issuedTokens(): string[] {
    return [...this.issued];
  }

  revokeTokens(): void {
    this.tokens.clear();
  }

  /** The 401 answer when the request has no valid, unexpired bearer token; else undefined. */
  checkBearer(req: IncomingMessage): Answer | undefined {
    const token = authValue(req, "Bearer");
    if (token === undefined) return fail(401, "missing bearer token");
    const expiresAt = this.tokens.get(token);
    if (expiresAt === undefined) return fail(401, "invalid token");
    if (this.now() >= expiresAt) {
      this.tokens.delete(token);
      return fail(401, "token expired");
    }
    return undefined;
  }

  /** POST /set_password: the one-time password (bearer, base64) sets the user's password. */
  setPassword(req: IncomingMessage, body: string): Answer {
    const keyProblem = this.checkApiKey(req);
    if (keyProblem) return keyProblem;
    const otp = decodedAuth(req, "Bearer");
    if (otp === undefined) return fail(401, "missing one-time password");
    const parsed = setPasswordBody.safeParse(jsonOrUndefined(body));
    if (!parsed.success) return fail(400, "body must be JSON {user, pw}");
    const account = this.users.get(parsed.data.user);
    if (!account?.otp || account.otp !== otp) return fail(401, "invalid one-time password");
    this.users.set(parsed.data.user, { password: parsed.data.pw });
    return json(200, { message: "password set" });
  }

  /** POST /create_token: a new access token valid `ttlS` seconds for basic credentials. */
  createToken(req: IncomingMessage, ttlS: number): Answer {
    const keyProblem = this.checkApiKey(req);
    if (keyProblem) return keyProblem;
    const decoded = decodedAuth(req, "Basic");
    if (decoded === undefined) return fail(401, "missing basic credentials");
    const colon = decoded.indexOf(":");
    const account = colon < 0 ? undefined : this.users.get(decoded.slice(0, colon));
    if (!account?.password || account.password !== decoded.slice(colon + 1)) {
      return fail(401, "invalid username or password");
    }
    const token = randomBytes(24).toString("base64url");
    this.tokens.set(token, this.now() + ttlS * 1000);
    this.issued.push(token);
    return json(200, { token, expires_in: ttlS });
  }

  private checkApiKey(req: IncomingMessage): Answer | undefined {
    const key = req.headers["x-api-key"];
    if (key === undefined) return fail(403, "missing x-api-key");
    if (key !== this.apiKey) return fail(403, "invalid api key");
    return undefined;
  }
}
