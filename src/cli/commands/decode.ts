import type { Command } from "commander";
import { type DecodedValueId, decodeValueId } from "../../transform/value-id.js";
import { type CliIo, writeJson, writeLine, writeText } from "../io.js";
import { nameArgument } from "../options.js";
import { renderTable } from "../table.js";

const HEAD = ["id", "measurement", "field", "unit", "type", "values id"] as const;

function fieldOf(decoded: DecodedValueId): string {
  if (decoded.field) return decoded.field;
  if (decoded.kind === "values_id") return "(tag values_id)";
  return "value (number) / text (string)";
}

function rowOf(decoded: DecodedValueId): string[] {
  return [
    decoded.id,
    decoded.measurement || "-",
    fieldOf(decoded),
    decoded.unit,
    decoded.type,
    decoded.codes?.valuesId ?? "-",
  ];
}

export function registerDecodeCommand(program: Command, io: CliIo): void {
  program
    .command("decode")
    .description("show what value ids become in InfluxDB: measurement, field, tags (spec 2.3)")
    .argument("<ids...>", "value ids, e.g. as listed by `values DEVICE`")
    .option("--json", "print a JSON array of the decoded ids")
    .addHelpText(
      "after",
      "\nExample:\n" +
        "  $ energy-etl decode e_03_07_04_000_total_solar_energy alarm_name values_id\n" +
        "    (the first becomes measurement total_solar_energy, unit kWh, type cumulative)\n" +
        "  $ energy-etl decode --json e_03_01_00_001_AC_activepower_L1\n" +
        "Codes missing from the spec's tables give unknown_* tags, e.g. unit unknown_03_99.\n",
    )
    .action((ids: string[], opts: { json?: boolean }) => {
      const decoded = ids.map((id) => decodeValueId(nameArgument("a value id", id)));
      if (opts.json) {
        writeJson(io.stdout, decoded);
        return;
      }
      writeText(io.stdout, renderTable(HEAD, decoded.map(rowOf), io.stdout));
      for (const d of decoded.filter(({ unknownCodes }) => unknownCodes.length > 0)) {
        writeLine(
          io.stdout,
          `note: ${d.id}: not in the spec's tables: ${d.unknownCodes.join(", ")}`,
        );
      }
    });
}
