import type { z } from "zod";
import type { Answered, ApiRequester, CallOptions, RequestSpec } from "./api-request.js";
import { ApiError } from "./errors.js";
import { invalidResponse, parseJson, registerSecretMembers } from "./parse-answer.js";
import {
  type DevicesResponse,
  devicesResponseSchema,
  type ResourcesResponse,
  resourcesResponseSchema,
  setPasswordResponseSchema,
  type TokenResponse,
  tokenResponseSchema,
  type ValuesResponse,
  valuesResponseSchema,
} from "./schemas.js";

/**
 * Path segment for an id: percent-encoded so that `site A+1` or `a/../devices` reach the server as
 * one segment. `.` and `..` cannot be sent at all (URLs normalise them away).
 */
export function encodeSegment(id: string): string {
  if (id === "" || id === "." || id === "..") {
    throw new ApiError(`cannot address the id ${JSON.stringify(id)} in a URL path`, {
      code: "request_rejected",
      endpoint: "(not sent)",
      retryable: false,
    });
  }
  return encodeURIComponent(id);
}

/** A JSON request and the schema its answer must have. */
interface JsonSpec<S extends z.ZodType> extends RequestSpec {
  readonly schema: S;
  /**
   * Members of the answer that are secrets (POST /create_token: `token`): registered before the
   * answer is validated, so that no message about a malformed answer can quote them.
   */
  readonly secretMembers?: readonly string[];
}

/**
 * The JSON endpoints of spec sections 4.1-4.3 and 5: each one request through the requester (its
 * retries, pacing and deadline), its whole body read (up to `maxAnswerBytes`) and validated.
 */
export class ApiEndpoints {
  constructor(
    private readonly requester: ApiRequester,
    private readonly maxAnswerBytes: number,
  ) {}

  /** GET /devices (spec 4.1). */
  async listDevices(call?: CallOptions): Promise<Answered<DevicesResponse>> {
    return this.json(
      { method: "GET", path: "devices", route: "/devices", auth: "bearer" },
      devicesResponseSchema,
      call,
    );
  }

  /** GET /<device_id>/resources (spec 4.2). */
  async listResources(deviceId: string, call?: CallOptions): Promise<Answered<ResourcesResponse>> {
    return this.json(
      {
        method: "GET",
        path: `${encodeSegment(deviceId)}/resources`,
        route: "/{device}/resources",
        auth: "bearer",
      },
      resourcesResponseSchema,
      call,
    );
  }

  /** GET /<device_id>/<resource_id>/values (spec 4.3). */
  async listValues(
    deviceId: string,
    resourceId: string,
    call?: CallOptions,
  ): Promise<Answered<ValuesResponse>> {
    return this.json(
      {
        method: "GET",
        path: `${encodeSegment(deviceId)}/${encodeSegment(resourceId)}/values`,
        route: "/{device}/{resource}/values",
        auth: "bearer",
      },
      valuesResponseSchema,
      call,
    );
  }

  /**
   * POST /set_password (spec 5.1): sets `password` for `user` with a one-time password. Never
   * sent twice: only a failure before anything reached the server is retried.
   */
  async setPassword(user: string, otp: string, password: string, call?: CallOptions) {
    await this.json(
      {
        method: "POST",
        path: "set_password",
        route: "/set_password",
        auth: { authorization: `Bearer ${Buffer.from(otp).toString("base64")}` },
        json: { user, pw: password },
        sendOnce: true,
      },
      setPasswordResponseSchema,
      call,
    );
  }

  /**
   * POST /create_token (spec 5.2) with `authorization` (Basic), ahead of other requests at the
   * rate gate; `slotHeld`: the request that needs the token gave up its slot for it. The token
   * is registered as a secret before the answer is validated.
   */
  createToken(authorization: string, slotHeld: boolean): Promise<Answered<TokenResponse>> {
    return this.json(
      {
        method: "POST",
        path: "create_token",
        route: "/create_token",
        auth: { authorization },
        priority: true,
        slotHeld,
      },
      tokenResponseSchema,
      {},
      ["token"],
    );
  }

  private json<S extends z.ZodType>(
    spec: RequestSpec,
    schema: S,
    call: CallOptions = {},
    secretMembers?: readonly string[],
  ): Promise<Answered<z.infer<S>>> {
    const jsonSpec: JsonSpec<S> = { ...spec, schema, secretMembers };
    return this.requester.run(
      jsonSpec,
      async (exchange, { endpoint, head }) => {
        const status = head.statusCode;
        const body = await exchange.readBody(this.maxAnswerBytes);
        if (body.over) {
          throw invalidResponse(
            `more than ${this.maxAnswerBytes} bytes (API_MAX_ANSWER_BYTES)`,
            false,
            "",
            { endpoint, status },
          );
        }
        if (jsonSpec.secretMembers) registerSecretMembers(body.text, jsonSpec.secretMembers);
        const parsed = parseJson(body.text, jsonSpec.schema, { endpoint, status });
        if (parsed instanceof ApiError) throw parsed;
        return parsed;
      },
      call,
    );
  }
}
