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

  it("a comma only groups thousands (1,5 is a decimal comma: refused, was 15); a count past 2^53 - 1 is refused (was rounded)", () => {
    expect(["1,000", "1,000,000", "12,345k", "1,000.5k"].map((v) => parseTokenCount("--max-context", v))).toEqual([1000, 1000000, 12345000, 1000500]);
    for (const v of ["1,5", "1,5k", "1,00", "1,0000", "12,34,567"]) {
      expect(() => parseTokenCount("--max-context", v), v).toThrow(
        `--max-context: expected a token count such as 120000, 120k or 1.2M, got ${JSON.stringify(v)}`,
      );
    }
    for (const v of ["99999999999999999999", "9007199254740993", "123456789012345678901234567890M"]) {
      expect(() => parseTokenCount("--max-context", v), v).toThrow(
        `--max-context: ${JSON.stringify(v)} is too large a token count (at most 9,007,199,254,740,991)`,
      );
    }
    expect(parseTokenCount("--max-context", "9007199254740991")).toBe(9007199254740991);
  });
});
