import type { Command } from "commander";
import { decodeValueId } from "../../transform/value-id.js";
import { createApiClient, createContext } from "../context.js";
import { type CliIo, writeJson, writeLine, writeText } from "../io.js";
import { nameArgument } from "../options.js";
import { renderTable } from "../table.js";

/** The API's object as JSON, or `rows` as a table and their count (`3 devices`). */
function print(
  io: CliIo,
  json: boolean,
  body: unknown,
  head: string[],
  rows: string[][],
  noun: string,
) {
  if (json) {
    writeJson(io.stdout, body);
    return;
  }
  writeText(io.stdout, renderTable(head, rows, io.stdout));
  writeLine(io.stdout, `${rows.length} ${noun}${rows.length === 1 ? "" : "s"}`);
}

/** A value id with what it becomes in InfluxDB (see `decode`). */
function valueRow(id: string): string[] {
  const decoded = decodeValueId(id);
  return [id, decoded.measurement || "(tag values_id)", decoded.unit, decoded.type];
}

const listCommand = (program: Command, name: string, description: string): Command =>
  program
    .command(name)
    .description(description)
    .option("--json", "print the API's JSON object as it came");

export function registerCatalogCommands(program: Command, io: CliIo): void {
  const client = (command: Command) => createApiClient(createContext(command, io));
  listCommand(program, "devices", "list the devices the API user may read (GET /devices)").action(
    async (opts: { json?: boolean }, command: Command) => {
      const api = await client(command);
      const body = (await api.listDevices()).value;
      const rows = body.device_ids.map((id) => [id]);
      print(io, opts.json === true, body, ["device_id"], rows, "device");
    },
  );

  listCommand(program, "resources", "list the resources of a device (GET /<device_id>/resources)")
    .argument("<device>", "device id (as listed by `devices`)")
    .action(async (device: string, opts: { json?: boolean }, command: Command) => {
      const id = nameArgument("the device id", device);
      const api = await client(command);
      const body = (await api.listResources(id)).value;
      const rows = body.resource_ids.map((id) => [id]);
      print(io, opts.json === true, body, ["resource_id"], rows, "resource");
    });

  listCommand(
    program,
    "values",
    "list the value ids of a resource (GET /<device_id>/<resource_id>/values)",
  )
    .argument("<device>", "device id")
    .argument("[resource]", "resource id", "all_data")
    .action(
      async (device: string, resource: string, opts: { json?: boolean }, command: Command) => {
        const id = nameArgument("the device id", device);
        const resourceId = nameArgument("the resource id", resource);
        const api = await client(command);
        const body = (await api.listValues(id, resourceId)).value;
        const head = ["value_id", "measurement", "unit", "type"];
        print(io, opts.json === true, body, head, body.values.map(valueRow), "value");
      },
    );
}
