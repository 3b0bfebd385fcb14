/**
 * Token estimates (docs/design.md "Context size"): `chars4` is Pi's estimate — per message
 * `ceil(chars / 4)` of the characters Pi counts (`context/size.ts`), the default; `o200k` counts
 * real tokens of the same texts with OpenAI's o200k_base encoding through `gpt-tokenizer` (loaded
 * on first use: about half a second), an image counting what Pi's estimate gives it.
 */
import { countedParts, ESTIMATED_IMAGE_CHARS, messageTokens, reachesProvider } from "../context/size.js";
import type { AgentMessage } from "../session/types.js";
import { UsageError } from "../util/errors.js";

export type TokenizerName = "chars4" | "o200k";
export const TOKENIZER_NAMES: TokenizerName[] = ["chars4", "o200k"];

export interface Tokenizer {
  name: TokenizerName;
  /** Estimated tokens of one text (for `chars4`: `Math.ceil(text.length / 4)`, UTF-16 units). */
  count(text: string): number;
  /** Estimated tokens of one message: what `context/size.ts` counts in it. */
  messageTokens(message: AgentMessage): number;
}

/** Pi's estimate: `ceil(chars / 4)`. */
export const CHARS4: Tokenizer = {
  name: "chars4",
  count: (text) => Math.ceil(text.length / 4),
  messageTokens,
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
    const count = (text: string) => (text === "" ? 0 : countTokens(text, options));
    const memo = new WeakMap<object, number>();
    o200k = {
      name: "o200k",
      count,
      messageTokens: (m) => {
        let n = memo.get(m);
        if (n === undefined && !reachesProvider(m)) n = 0;
        if (n === undefined) {
          const parts = countedParts(m);
          n = parts.texts.reduce((sum, t) => sum + count(t), 0) + Math.ceil((parts.images * ESTIMATED_IMAGE_CHARS) / 4);
          memo.set(m, n);
        }
        return n;
      },
    };
  }
  return o200k;
}
