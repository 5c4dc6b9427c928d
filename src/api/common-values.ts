/**
 * Spec 2.3, "Value ids present for every device": the meta values, the alarm ids, and the energy,
 * power and savings values every installation lists.
 */
export const COMMON_VALUE_IDS: readonly string[] = [
  "values_id",
  "protocol_id",
  "alarm_index",
  "alarm_name",
  "e_03_07_04_000_total_solar_energy",
  "e_03_07_04_000_total_load_energy",
  "e_03_07_04_000_total_battery_energy",
  "e_03_07_04_000_genset_energy",
  "e_03_07_04_000_total_export_energy",
  "e_03_07_04_000_total_other_energy",
  "e_03_01_00_000_total_solar_power",
  "e_03_01_00_000_total_load_power",
  "e_03_01_00_000_total_battery_power",
  "e_03_01_00_000_genset_power",
  "e_03_01_00_000_total_other_power",
  "e_00_00_04_000_money_saved",
  "e_00_00_04_000_revenue_created",
  "e_03_23_04_000_CO2_saved",
  "e_00_00_04_000_trees_saved",
  "e_00_00_00_000_money_per_kWh",
  "e_00_00_00_000_revenue_per_kWh",
  "e_00_00_00_000_CO2_saved_per_kWh",
  "e_00_00_00_000_trees_saved_per_kWh",
];
