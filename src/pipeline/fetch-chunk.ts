import type { DataRecord } from "../api/schemas.js";
import { RecordEncoder } from "../transform/record-encoder.js";
import type { Pipeline } from "./pipeline.js";
import type { Chunk } from "./plan-chunks.js";

/** What one fetched and written chunk produced. */
export interface ChunkResult {
  readonly records: number;
  readonly points: number;
}

/**
 * Fetches one chunk (one GET /data request), encodes its records and writes them; resolves only
 * when the sink has accepted every line, so the caller may then record the chunk as done.
 */
export async function fetchChunk(
  pipeline: Pipeline,
  deviceId: string,
  resourceId: string,
  chunk: Chunk,
  encoder: RecordEncoder = new RecordEncoder(pipeline.decoder, deviceId, resourceId),
): Promise<ChunkResult> {
  const startedMs = Date.now();
  try {
    const result = await fetchAndWrite(pipeline, deviceId, resourceId, chunk, encoder);
    pipeline.observer?.chunkDone((Date.now() - startedMs) / 1000, result.points);
    return result;
  } catch (error) {
    pipeline.counters.chunkErrors++;
    pipeline.observer?.chunkFailed(error);
    throw error;
  }
}

async function fetchAndWrite(
  pipeline: Pipeline,
  deviceId: string,
  resourceId: string,
  chunk: Chunk,
  encoder: RecordEncoder,
): Promise<ChunkResult> {
  // lines written; an attempt that failed midway and was retried writes its first lines again
  let points = 0;
  const query = {
    deviceId,
    resourceId,
    values: chunk.values,
    from: new Date(chunk.fromS * 1000),
    to: new Date(chunk.toS * 1000),
  };
  const records = await pipeline.client.streamData(query, async (batch: DataRecord[]) => {
    const lines: string[] = [];
    points += encoder.encode(batch, lines).points;
    await pipeline.sink.write(lines);
  });
  pipeline.counters.dataRequests++;
  pipeline.counters.points += points;
  pipeline.counters.chunks++;
  return { records, points };
}

/** Log context of a chunk: device, resource, window and how many values. */
export function chunkContext(deviceId: string, resourceId: string, chunk: Chunk) {
  return {
    device: deviceId,
    resource: resourceId,
    chunk: chunk.index,
    from: new Date(chunk.fromS * 1000).toISOString(),
    to: new Date(chunk.toS * 1000).toISOString(),
    values: chunk.values.length,
  };
}
