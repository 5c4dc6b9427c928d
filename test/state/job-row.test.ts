/** The key of a job: what makes the same request find its job again (stored in backfill_jobs). */
import { createHash } from "node:crypto";
import { jobKey } from "../../src/state/job-row.js";
import type { BackfillSpec } from "../../src/state/types.js";
import { SPEC } from "./support.js";

describe("jobKey", () => {
  it("is stable: value id order and duplicates and the reason do not matter", () => {
    const key = jobKey(SPEC);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(jobKey({ ...SPEC, valueIds: ["e_a", "e_b", "e_a"] })).toBe(key);
    expect(jobKey({ ...SPEC, reason: "new_value" })).toBe(key);
    expect(jobKey({ ...SPEC, reason: "parked" })).toBe(key);
  });

  it.each<[string, Partial<BackfillSpec>]>([
    ["toS", { toS: SPEC.toS + 1 }],
    ["fromS", { fromS: SPEC.fromS - 1 }],
    ["deviceId", { deviceId: "dev-2" }],
    ["resourceId", { resourceId: "meter" }],
    ["valueIds", { valueIds: ["e_a"] }],
  ])("changes with %s", (_field, change) => {
    expect(jobKey({ ...SPEC, ...change })).not.toBe(jobKey(SPEC));
  });

  it("is the documented formula", () => {
    const identity = JSON.stringify(["dev-1", "inverter", ["e_a", "e_b"], SPEC.fromS, SPEC.toS]);
    expect(jobKey(SPEC)).toBe(createHash("sha256").update(identity).digest("hex"));
  });
});
