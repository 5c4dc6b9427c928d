import { afterCommit } from "../../src/pipeline/cursor.js";
import type { CursorStore, WindowCommit } from "../../src/state/cursor-store.js";
import type { Cursor } from "../../src/state/types.js";

/** Commits a fully fetched window as a sync does: the cursor rule applied in the store. */
export function commitWindow(
  cursors: CursorStore,
  deviceId: string,
  resourceId: string,
  window: WindowCommit,
  now: Date,
): Cursor {
  return cursors.update(deviceId, resourceId, (cursor) => afterCommit(cursor, window), now);
}
