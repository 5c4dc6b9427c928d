import { z } from "zod";

/** GET /devices (spec 4.1). Catalog objects keep unknown members, so `--json` shows them. */
export const devicesResponseSchema = z.looseObject({ device_ids: z.array(z.string()) });
export type DevicesResponse = z.infer<typeof devicesResponseSchema>;

/** GET /<device_id>/resources (spec 4.2). */
export const resourcesResponseSchema = z.looseObject({
  device_id: z.string(),
  resource_ids: z.array(z.string()),
});
export type ResourcesResponse = z.infer<typeof resourcesResponseSchema>;

/** GET /<device_id>/<resource_id>/values (spec 4.3). */
export const valuesResponseSchema = z.looseObject({
  device_id: z.string(),
  resource_id: z.string(),
  values: z.array(z.string()),
});
export type ValuesResponse = z.infer<typeof valuesResponseSchema>;

/** POST /create_token (spec 5.2). */
export const tokenResponseSchema = z.object({
  token: z.string().min(1),
  expires_in: z.number().int().positive(),
});

/** POST /set_password (spec 5.1): the response is not documented, so anything is accepted. */
export const setPasswordResponseSchema = z.unknown();
