/**
 * Sizes of JSON serializations (the extension's `JSON.stringify(x).length`), memoized per object so
 * that a message shared by several measurements (the branch, the context before and after pruning)
 * is serialized once. Only for objects that are not mutated afterwards (sessions read for a report).
 */

/** `JSON.stringify(value).length`, memoized by object identity. */
export type JsonLength = (value: object) => number;

/** A fresh memo (one per session measured; entries go when the objects do). */
export function jsonLengthMemo(): JsonLength {
  const memo = new WeakMap<object, number>();
  return (value) => {
    let n = memo.get(value);
    if (n === undefined) {
      n = (JSON.stringify(value) ?? "").length;
      memo.set(value, n);
    }
    return n;
  };
}

/**
 * `JSON.stringify(list).length` from the lengths of its elements: brackets, elements, commas.
 * Every element must be an object (as messages are).
 */
export function jsonListLength(list: object[], lengthOf: JsonLength): number {
  let n = 2 + Math.max(0, list.length - 1);
  for (const item of list) n += lengthOf(item);
  return n;
}
