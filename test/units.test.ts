/**
 * The command line's token counts (cli/units.ts, README "Units"): whole numbers of tokens once `k`
 * or `M` is applied; a fraction of a token is refused, never rounded.
 */
import { describe, expect, it } from "vitest";
import { parseTokenCount } from "../src/cli/units.js";

describe("parseTokenCount", () => {
  it("reads whole counts in every accepted form", () => {
    const read = (v: string) => parseTokenCount("--max-context", v);
    expect(["120000", "120k", "120K", "1.2M", "1.25k", "1.000k", "1.0", "120_000", "120,000", " 7 ", "0", "0.000001M"].map(read)).toEqual([
      120000, 120000, 120000, 1200000, 1250, 1000, 1, 120000, 120000, 7, 0, 1,
    ]);
  });

  it("refuses a fraction of a token, whatever the scale", () => {
    for (const v of ["0.5", "1.5", "1.2345k", "0.0000001M", "2.5000001M"]) {
      expect(() => parseTokenCount("--max-context", v), v).toThrow(/^--max-context: a token count is a whole number of tokens/);
    }
    expect(() => parseTokenCount("--max-context", "0.5")).toThrow(/\(a share is not a token count\)$/);
  });
});
