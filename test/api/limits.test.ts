/** Which value ids a `values=` list can carry (spec 4.4: ids separated by commas, no spaces). */
import { isRequestable } from "../../src/api/limits.js";

describe("isRequestable", () => {
  it.each([
    ["a plain id", "10.1.1", true],
    ["an id with letters, dots and underscores", "Energy_1.total", true],
    ["an id of one character", "7", true],
    ["an id with a non-ASCII letter", "Zähler.3", true],
    ["the empty id", "", false],
    ["an id with a comma (the list would cut it)", "10,1", false],
    ["an id with a space", "10 1", false],
    ["an id with a tab", "10\t1", false],
    ["an id with a line break", "10\n1", false],
    ["an id with a no-break space (white space in Unicode)", "10\u00a01", false],
    ["an id of a single comma", ",", false],
  ])("%s (%j) -> %p", (_name, valueId, requestable) => {
    expect(isRequestable(valueId)).toBe(requestable);
  });
});
