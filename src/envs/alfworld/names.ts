/**
 * ALFWorld's display names ("drawer 3", "sinkbasin 1", "loc 12"): all entity ids, lower-cased and
 * sorted, are grouped by the text before their first `_bar_` ("basin" appended when the id holds
 * it) and numbered so that the smallest id of a group gets the highest number. Ids without `_bar_`
 * (the agent, the types) keep their id followed by a space, as the reference prints them.
 */
export function displayNames(ids: Iterable<string>): Map<string, string> {
  const sorted = [...new Set(ids)].sort();
  const groupOf = (id: string) => id.split("_bar_")[0] + (id.includes("basin") ? "basin" : "");
  const count = new Map<string, number>();
  for (const id of sorted) if (id.includes("_bar_")) count.set(groupOf(id), (count.get(groupOf(id)) ?? 0) + 1);
  const names = new Map<string, string>();
  for (const id of sorted) {
    if (!id.includes("_bar_")) {
      names.set(id, `${id} `);
      continue;
    }
    const group = groupOf(id);
    const n = count.get(group)!;
    count.set(group, n - 1);
    names.set(id, `${group} ${n}`);
  }
  return names;
}
