/**
 * JSON written piece by piece: the bytes of `JSON.stringify(value, null, 2)`, produced as a
 * sequence of strings so that a large document (a rendered context, an archive's report) is never
 * held as one string. Only plain arrays and objects are walked; every other value, and any value
 * nested deeper than the walk goes, is one `JSON.stringify` call re-indented to its depth (JSON
 * text never holds a raw newline, so indenting is replacing "\n").
 */

/**
 * Which containers are walked: the top-level object (a report document) and arrays down to this
 * depth (lists of messages, of sessions); anything else is one stringify.
 */
const ARRAY_DEPTH = 4;

function isPlain(value: unknown): value is Record<string, unknown> | unknown[] {
  if (typeof value !== "object" || value === null) return false;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return false;
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function walked(value: unknown, depth: number): value is Record<string, unknown> | unknown[] {
  return isPlain(value) && (Array.isArray(value) ? depth < ARRAY_DEPTH : depth === 0);
}

/** `[head, tail]`: how many characters `JSON.stringify` of a value wrapped in `levels` arrays puts before and after it. */
const frames: [number, number][] = [];
function frame(levels: number): [number, number] {
  if (!frames[levels]) {
    let wrapped: unknown = 0;
    for (let i = 0; i < levels; i++) wrapped = [wrapped];
    const text = JSON.stringify(wrapped, null, 2);
    const head = text.indexOf("0");
    frames[levels] = [head, text.length - head - 1];
  }
  return frames[levels];
}

/**
 * What `JSON.stringify` writes for a value at indentation `pad` (two spaces per level): undefined
 * for one it leaves out (undefined, a function, a symbol). Indented by stringifying the value
 * inside as many arrays as it is deep and cutting the frame off (natively, no pass over the text).
 */
function leaf(value: unknown, pad: string): string | undefined {
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return undefined;
  const levels = pad.length / 2;
  if (levels === 0 || value === null || typeof value !== "object") return JSON.stringify(value, null, 2);
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    // toJSON may answer undefined (left out): stringify alone, then indent.
    const text = JSON.stringify(value, null, 2) as string | undefined;
    return text === undefined ? undefined : text.replaceAll("\n", `\n${pad}`);
  }
  let wrapped: unknown = value;
  for (let i = 0; i < levels; i++) wrapped = [wrapped];
  const text = JSON.stringify(wrapped, null, 2);
  const [head, tail] = frame(levels);
  return text.slice(head, text.length - tail);
}

function* pieces(value: Record<string, unknown> | unknown[], pad: string, depth: number): Generator<string> {
  const inner = `${pad}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) {
      yield "[]";
      return;
    }
    yield "[";
    for (let i = 0; i < value.length; i++) {
      yield `${i === 0 ? "" : ","}\n${inner}`;
      const member = value[i];
      // An array member JSON leaves out is written as null.
      if (walked(member, depth + 1)) yield* pieces(member, inner, depth + 1);
      else yield leaf(member, inner) ?? "null";
    }
    yield `\n${pad}]`;
    return;
  }
  let first = true;
  for (const key of Object.keys(value)) {
    const member = value[key];
    const deep = walked(member, depth + 1);
    const text = deep ? undefined : leaf(member, inner);
    if (!deep && text === undefined) continue; // left out, as JSON leaves it out
    yield `${first ? "{" : ","}\n${inner}${JSON.stringify(key)}: `;
    first = false;
    if (deep) yield* pieces(member, inner, depth + 1);
    else yield text as string;
  }
  yield first ? "{}" : `\n${pad}}`;
}

/**
 * The pieces of `JSON.stringify(value, null, 2)`, in order (their concatenation is exactly that
 * string). A top-level value `JSON.stringify` cannot write (undefined, a function) gives nothing.
 * @throws TypeError as `JSON.stringify` does (a BigInt, a cycle)
 */
export function* jsonPieces(value: unknown): Generator<string> {
  if (walked(value, 0)) {
    yield* pieces(value, "", 0);
    return;
  }
  const text = leaf(value, "");
  if (text !== undefined) yield text;
}
