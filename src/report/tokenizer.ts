/**
 * Token estimates (docs/design.md §9): `chars4` is `round(chars / 4)`, the convention the
 * extension uses everywhere (default); `o200k` counts real tokens with OpenAI's o200k_base
 * encoding through `gpt-tokenizer` (loaded on first use: about half a second).
 */
import { UsageError } from "../util/errors.js";

export type TokenizerName = "chars4" | "o200k";
export const TOKENIZER_NAMES: TokenizerName[] = ["chars4", "o200k"];

export interface Tokenizer {
  name: TokenizerName;
  /** Estimated tokens of one text (for `chars4`: `Math.round(text.length / 4)`, UTF-16 units). */
  count(text: string): number;
  /** Tokens from a length alone, for tokenizers that need no text (`chars4`); absent otherwise. */
  fromChars?: (chars: number) => number;
}

/** `round(chars / 4)`: the extension's estimate. */
export const CHARS4: Tokenizer = {
  name: "chars4",
  count: (text) => Math.round(text.length / 4),
  fromChars: (chars) => Math.round(chars / 4),
};

let o200k: Tokenizer | null = null;

/**
 * The tokenizer for a `--tokenizer` value.
 * @throws UsageError for an unknown name
 */
export async function loadTokenizer(name: string | undefined): Promise<Tokenizer> {
  if (name === undefined || name === "chars4") return CHARS4;
  if (name !== "o200k") throw new UsageError(`--tokenizer: expected one of ${TOKENIZER_NAMES.join(", ")}, got ${JSON.stringify(name)}`);
  if (!o200k) {
    const { countTokens } = await import("gpt-tokenizer/encoding/o200k_base");
    // Special-token text inside a session (e.g. "<|endoftext|>") is counted as ordinary text.
    const options = { disallowedSpecial: new Set<string>() };
    o200k = { name: "o200k", count: (text) => (text === "" ? 0 : countTokens(text, options)) };
  }
  return o200k;
}
