import type { ApiClient } from "../../src/api/api-client.js";
import type { DataOptions, DataPage, DataQuery } from "../../src/api/data-stream.js";
import type { DataRecord } from "../../src/api/schemas.js";

/** Every page of the answer a GET /data request ended with (retries start it over), in order. */
export async function answerPages(
  client: ApiClient,
  query: DataQuery,
  options?: DataOptions,
): Promise<DataPage[]> {
  const answered = await client.data(
    query,
    async (answer) => {
      const pages: DataPage[] = [];
      for await (const page of answer.pages) pages.push(page);
      return pages;
    },
    options,
  );
  return answered.value;
}

/** The valid records of the answer a GET /data request ended with. */
export async function answerRecords(
  client: ApiClient,
  query: DataQuery,
  options?: DataOptions,
): Promise<DataRecord[]> {
  return (await answerPages(client, query, options)).flatMap((page) => page.records);
}
