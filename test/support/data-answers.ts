import type { ApiClient } from "../../src/api/api-client.js";
import type { CallOptions } from "../../src/api/api-request.js";
import type { DataQuery } from "../../src/api/data-stream.js";
import type { DataRecord } from "../../src/api/schemas.js";
import { type DataPage, recordPages } from "../../src/transform/record-pages.js";

/** Options of a GET /data read in pages: the call's, and records per page. */
type PageOptions = CallOptions & { readonly pageSize?: number };

/** Every page of the answer a GET /data request ended with (retries start it over), in order. */
export async function answerPages(
  client: ApiClient,
  query: DataQuery,
  options: PageOptions = {},
): Promise<DataPage[]> {
  const { pageSize, ...call } = options;
  const answered = await client.data(
    query,
    async (answer) => {
      const pages: DataPage[] = [];
      for await (const page of recordPages(answer, query.values, pageSize)) pages.push(page);
      return pages;
    },
    call,
  );
  return answered.value;
}

/** The valid records of the answer a GET /data request ended with. */
export async function answerRecords(
  client: ApiClient,
  query: DataQuery,
  options?: PageOptions,
): Promise<DataRecord[]> {
  return (await answerPages(client, query, options)).flatMap((page) => page.records);
}
