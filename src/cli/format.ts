/**
 * Numbers as the reports print them: counts with thousands separators, short token counts for
 * narrow tables, byte sizes, signed percentages.
 */

import { groupDigits } from "../util/text.js";

/** `12,345` (util/text.ts {@link groupDigits}). */
export const n: (x: number) => string = groupDigits;

/** `1.2 MB`, `340 KB`, `12 B`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} B`;
}

/** A token count in few characters: `812`, `7.4k`, `71.5k`, `108k`, `1.2M`. */
export function shortCount(x: number): string {
  if (x < 1000) return String(x);
  if (x < 100_000) return `${(x / 1000).toFixed(1)}k`;
  if (x < 999_500) return `${Math.round(x / 1000)}k`;
  return `${(x / 1_000_000).toFixed(1)}M`;
}

/** `-78%`, `+3%`, `0%` of after against before. */
export function percentChange(before: number, after: number): string {
  if (before === 0) return "0%";
  const p = Math.round((100 * (after - before)) / before);
  return p > 0 ? `+${p}%` : `${p}%`;
}

/** Which Pi's context a figure is: stock Pi's own (`pi-only`), or with the pi-condense extension switched on. */
export function sentByName(as: "pi-only" | "extension"): string {
  return as === "pi-only" ? "stock Pi" : "with pi-condense";
}

/**
 * The one "before → after" line of `render --stats` and `budget`:
 * `context Pi sends (stock Pi): 71,454 ~tokens now → 14,430 after \`condense run\` (-80%)`.
 */
export function sentLine(as: "pi-only" | "extension", context: { before: { tokens: number }; after: { tokens: number } }): string {
  const { before, after } = context;
  return `context Pi sends (${sentByName(as)}): ${n(before.tokens)} ~tokens now → ${n(after.tokens)} after \`condense run\` (${percentChange(before.tokens, after.tokens)})`;
}
