/**
 * Every command's work grows linearly with the session (issue 18): a generated session twice as
 * long (twice the copies of the same real turns, bench/generate.js) may cost at most 2.2 times the
 * work. Work is counted, not timed — a deterministic cost counter: while a command runs, the
 * built-in methods that walk a collection or a string (Array map/filter/some/find/includes/slice/…,
 * array and Map/Set iteration, String split/indexOf/includes/replace/…, RegExp test,
 * JSON.parse/stringify) add the length they walk to a count. A pass over the context per chain,
 * per result or per message (the O(n²) shapes issue 18 removed) makes the count grow four-fold
 * when the session doubles.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSession, turnSources } from "../bench/generate.js";
import { runCli } from "./cli-capture.js";
import { makeTempDir, SHARED_SESSIONS, sharedSessionFiles } from "./helpers.js";

/** Largest allowed ratio of the work on the doubled session to the work on the base one. */
const MAX_RATIO = 2.2;
/** Copies of the (small) real sessions in the base session; the doubled one has twice as many. */
const COPIES = 6;

type Walkable = { length?: number; size?: number };
const ARRAY_METHODS = [
  "map",
  "forEach",
  "filter",
  "some",
  "every",
  "find",
  "findIndex",
  "findLast",
  "findLastIndex",
  "includes",
  "indexOf",
  "lastIndexOf",
  "reduce",
  "reduceRight",
  "slice",
  "concat",
  "join",
  "flatMap",
  "flat",
  "sort",
  "splice",
  "keys",
  "values",
  "entries",
] as const;
const STRING_METHODS = [
  "split",
  "lastIndexOf",
  "includes",
  "startsWith",
  "endsWith",
  "replace",
  "replaceAll",
  "match",
  "matchAll",
  "search",
  "trim",
  "toLowerCase",
  "toUpperCase",
] as const;

/**
 * Count the work of `fn`: each patched built-in adds the length (or size) of what it walks.
 * The patches are removed before this returns, whatever happens.
 */
async function countWork(fn: () => Promise<unknown>): Promise<number> {
  let ops = 0;
  const restore: (() => void)[] = [];
  const patch = (proto: object, name: PropertyKey, size: (self: Walkable, args: unknown[], result: unknown) => number) => {
    const original = Reflect.get(proto, name) as (...a: unknown[]) => unknown;
    Reflect.set(proto, name, function (this: Walkable, ...args: unknown[]) {
      const result = original.apply(this, args);
      ops += size(this, args, result);
      return result;
    });
    restore.push(() => Reflect.set(proto, name, original));
  };
  const length = (self: Walkable) => self.length ?? 0;
  const size = (self: Walkable) => self.size ?? 0;
  for (const name of ARRAY_METHODS) patch(Array.prototype, name, length);
  patch(Array.prototype, Symbol.iterator, length);
  for (const name of STRING_METHODS) patch(String.prototype, name, length);
  // A search from a position walks from there to the match (a loop over a text's lines is linear).
  patch(String.prototype, "indexOf", (self, args, result) => {
    const from = Math.max(0, Number(args[1] ?? 0) || 0);
    return (result === -1 ? (self.length ?? 0) : (result as number) + String(args[0]).length) - from;
  });
  for (const proto of [Map.prototype, Set.prototype]) {
    for (const name of ["forEach", "keys", "values", "entries", Symbol.iterator]) patch(proto, name, size);
  }
  // `exec` is left alone: a global replace calls it once per match (each would count the whole text).
  patch(RegExp.prototype, "test", (_self, args) => String(args[0] ?? "").length);
  const { parse, stringify } = JSON;
  JSON.parse = (text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
    ops += text.length;
    return parse(text, reviver);
  };
  JSON.stringify = ((...args: Parameters<typeof stringify>) => {
    const out = stringify(...args);
    ops += out?.length ?? 0;
    return out;
  }) as typeof stringify;
  restore.push(() => {
    JSON.parse = parse;
    JSON.stringify = stringify;
  });
  try {
    await fn();
  } finally {
    for (const undo of restore.reverse()) undo();
  }
  return ops;
}

const present = sharedSessionFiles().length > 0;

describe.skipIf(!present)("every command's work is linear in the session (doubling it at most 2.2× the work)", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  const files: Record<"base" | "double", string> = { base: "", double: "" };

  beforeAll(() => {
    tmp = makeTempDir("linear");
    // The small real sessions without compaction (several hundred KB each), in rotation.
    const sources = turnSources(SHARED_SESSIONS).filter((s) => s.entries.length < 200);
    expect(sources.length).toBeGreaterThanOrEqual(3);
    files.base = path.join(tmp.dir, "base.jsonl");
    files.double = path.join(tmp.dir, "double.jsonl");
    buildSession(sources, files.base, 0, { copies: COPIES });
    buildSession(sources, files.double, 0, { copies: 2 * COPIES });
  });
  afterAll(() => tmp?.cleanup());

  const commands: [string, string[]][] = [
    ["render --format json", ["render", "--format", "json"]],
    ["render --stats (the context before and after run)", ["render", "--stats"]],
    ["render --dry-run --json", ["render", "--dry-run", "--json"]],
    ["run --dry-run --json", ["run", "--dry-run", "--json"]],
    ["metrics --json", ["metrics", "--json", "--jobs", "1"]],
    ["budget --json", ["budget", "--json"]],
    ["compact --dry-run --json", ["compact", "--dry-run", "--json", "--keep-recent-tokens", "2000"]],
  ];
  for (const [label, args] of commands) {
    it(label, async () => {
      const work: Record<string, number> = {};
      for (const size of ["base", "double"] as const) {
        work[size] = await countWork(async () => {
          const run = await runCli(...args, files[size]);
          expect(run.code, run.stderr).toBe(0);
        });
      }
      const ratio = work.double / work.base;
      expect(work.base).toBeGreaterThan(1_000_000);
      console.log(`${label}: work ${work.base} → ${work.double} (${ratio.toFixed(2)}x)`);
      expect(ratio, `work ${work.base} → ${work.double}`).toBeLessThanOrEqual(MAX_RATIO);
      // And the doubled session is really more work (the counter sees the session's own walk).
      expect(ratio).toBeGreaterThan(1.2);
    });
  }
});
