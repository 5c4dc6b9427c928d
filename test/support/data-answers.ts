import type { ApiClient } from "../../src/api/api-client.js";
import type { CallOptions } from "../../src/api/api-request.js";
import type { DataQuery } from "../../src/api/data-stream.js";
import { notRecords } from "../../src/pipeline/chunk-writer.js";
import type { DataRecord } from "../../src/records/data-record.js";
import { JsonArrayError } from "../../src/transform/json-array-scanner.js";
import { type DataPage, recordPages } from "../../src/transform/record-pages.js";

/** Options of a GET /data read in pages: the call's, and records per page. */
type PageOptions = CallOptions & { readonly pageSize?: number };

/** Every page of the whole answer a GET /data request ended with, in order. */
export async function answerPages(
  client: ApiClient,
  query: DataQuery,
  options: PageOptions = {},
): Promise<DataPage[]> {
  const { pageSize, ...call } = options;
  const answered = await client.data(query, call);
  const pages: DataPage[] = [];
  try {
    for await (const page of recordPages(answered.value, query.values, pageSize)) pages.push(page);
  } catch (error) {
    throw error instanceof JsonArrayError ? notRecords(error, answered.value) : error;
  }
  return pages;
}

/** The valid records of the answer a GET /data request ended with. */
export async function answerRecords(
  client: ApiClient,
  query: DataQuery,
  options?: PageOptions,
): Promise<DataRecord[]> {
  return (await answerPages(client, query, options)).flatMap((page) => page.records);
}
