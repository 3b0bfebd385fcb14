/**
 * The size of a message list as the extension measures it (docs/design.md "Live reclaim ratio").
 */

/** Chars of the JSON serialization (the seed's `sizeMessages`) and the estimate round(chars / 4). */
export function sizeMessages(messages: unknown[]): { chars: number; tokens: number } {
  const chars = JSON.stringify(messages).length;
  return { chars, tokens: Math.round(chars / 4) };
}
