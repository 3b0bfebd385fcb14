/**
 * One convention for the numbers given on the command line (README "Units"):
 * - a token count is a whole number, optionally with `k` (thousand) or `M` (million): `120000`,
 *   `120k`, `1.2M`; `_` between digits and `,` before a group of three are ignored (`120_000`,
 *   `120,000`; `1,5` is refused, not read as 15); at most 2^53 − 1;
 * - a share is a fraction from 0 to 1 (`0.8`) or a percentage with `%` (`80%`). A bare number
 *   above 1 is refused rather than guessed: older versions read `--max-chain-share 80` as a
 *   percentage, and `0.8` now means 80%, not 0.8%.
 */
import { UsageError } from "../util/errors.js";

const COUNT = /^(\d+(?:\.\d+)?)\s*([kKmM]?)$/;

/**
 * A token count (`120000`, `120k`, `1.2M`): a whole number of tokens once `k` or `M` is applied.
 * A fraction of a token (`0.5`, `1.5`, `1.2345k`) is refused, not rounded: `0.5` is most likely a
 * share given where a count goes, and rounding it made a gate that fails on every session.
 * @throws UsageError naming the flag, the value and the accepted forms
 */
export function parseTokenCount(flag: string, value: string, options: { min?: number } = {}): number {
  // `_` between digits anywhere (120_000); `,` only before a group of three (1,000 — `1,5` is a decimal comma, refused).
  const text = value
    .trim()
    .replace(/(?<=\d)_(?=\d)/g, "")
    .replace(/(?<=\d),(?=\d{3}(?!\d))/g, "");
  const m = COUNT.exec(text);
  const zeros = m?.[2] ? (m[2].toLowerCase() === "k" ? 3 : 6) : 0;
  // Whole once scaled: the decimals beyond the scale's zeros are all 0 (decided on the digits, not on a float).
  const decimals = (m?.[1].split(".")[1] ?? "").replace(/0+$/, "");
  const result = m ? Math.round(Number(m[1]) * 10 ** zeros) : Number.NaN;
  const min = options.min ?? 0;
  const forms = `such as 120000, 120k or 1.2M, got ${JSON.stringify(value)}`;
  if (Number.isFinite(result) && decimals.length > zeros) {
    throw new UsageError(
      `${flag}: a token count is a whole number of tokens ${forms}${Number(m?.[1]) < 1 && zeros === 0 ? " (a share is not a token count)" : ""}`,
    );
  }
  if (Number.isFinite(result) && result > Number.MAX_SAFE_INTEGER) {
    throw new UsageError(`${flag}: ${JSON.stringify(value)} is too large a token count (at most ${Number.MAX_SAFE_INTEGER.toLocaleString("en-US")})`);
  }
  if (!Number.isFinite(result) || result < min) {
    throw new UsageError(`${flag}: expected a token count ${min > 0 ? `of at least ${min} ` : ""}${forms}`);
  }
  return result;
}

/**
 * A share as a fraction from 0 to 1: `0.8` or `80%`.
 * @param options.above0 refuse 0 (the range is (0, 1])
 * @throws UsageError naming the flag and the accepted forms; for a bare number above 1, saying
 *   how to write it as a percentage
 */
export function parseFraction(flag: string, value: string, options: { above0?: boolean } = {}): number {
  const text = value.trim();
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(text);
  const number = percent ? Number(percent[1]) / 100 : /^\d*\.?\d+$/.test(text) ? Number(text) : Number.NaN;
  const range = options.above0 ? "above 0 and at most 1" : "from 0 to 1";
  if (!percent && Number.isFinite(number) && number > 1 && number <= 100) {
    throw new UsageError(`${flag}: a bare number is a fraction ${range}; for ${text} percent write ${text}% (or ${number / 100})`);
  }
  if (!Number.isFinite(number) || number > 1 || number < 0 || (options.above0 && number === 0)) {
    throw new UsageError(`${flag}: expected a fraction ${range} (0.8) or a percentage (80%), got ${JSON.stringify(value)}`);
  }
  return number;
}
