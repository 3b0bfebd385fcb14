/**
 * Sizes of JSON serializations (the extension's `JSON.stringify(x).length`, for the flush metrics it
 * reads), memoized per object so that a message is serialized once. Only for objects that are not
 * mutated afterwards (sessions read for a report).
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
