/**
 * The deterministic summarizer's path scan (`filePaths`) against the one-regex search it replaces,
 * output for output: every string of every session in ../shared/sessions and fixtures/ (tool
 * outputs, arguments, prose), and seeded random texts built from the characters the pattern turns
 * on. A difference in one path, or in their order, fails here.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { filePaths } from "../src/summarize/facts.js";
import { FIXTURES, SHARED_SESSIONS } from "./helpers.js";

/** Every distinct string value of every JSON line of every session file (shared sessions when present, fixtures). */
function corpus(): string[] {
  const texts = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v === "string") texts.add(v);
    else if (Array.isArray(v)) for (const x of v) walk(x);
    else if (v && typeof v === "object") for (const x of Object.values(v)) walk(x);
  };
  for (const dir of [SHARED_SESSIONS, FIXTURES]) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".jsonl"))) {
      for (const line of readFileSync(path.join(dir, f), "utf8").split("\n")) {
        try {
          walk(JSON.parse(line));
        } catch {
          // a line that is not JSON carries no texts
        }
      }
    }
  }
  return [...texts];
}

/** Seeded random texts (mulberry32) over `alphabet`, lengths 0..max. */
function randomTexts(seed: number, count: number, alphabet: string[], max: number): string[] {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out: string[] = [];
  for (let n = 0; n < count; n++) {
    const len = Math.floor(next() * (max + 1));
    let text = "";
    for (let i = 0; i < len; i++) text += alphabet[Math.floor(next() * alphabet.length)];
    out.push(text);
  }
  return out;
}

const TEXTS = corpus();

/** The path search as one regex over the text: the definition {@link filePaths} must agree with. */
const PATH_SEARCH = /(?:^|[\s"'`(=[,:<])((?:\.{1,2}\/|~\/|\/)?(?:[\w@.+-]+\/)+[\w@+-]+(?:\.[A-Za-z]\w{0,7})+)(?=$|[\s"'`(),:;\]>])/g;
function filePathsByRegex(text: string, limit = Number.POSITIVE_INFINITY): string[] {
  const out = new Set<string>();
  PATH_SEARCH.lastIndex = 0;
  for (let m = PATH_SEARCH.exec(text); m !== null && out.size < limit; m = PATH_SEARCH.exec(text)) if (!m[1].includes("//")) out.add(m[1]);
  return [...out];
}

describe("filePaths: runs of path characters tested whole, as the one-regex search finds them", () => {
  it("agrees on every string of the sessions, with and without a limit", () => {
    expect(TEXTS.length).toBeGreaterThan(1000);
    let withPaths = 0;
    for (const text of TEXTS) {
      for (const limit of [Number.POSITIVE_INFINITY, 60, 2]) expect(filePaths(text, limit), text.slice(0, 200)).toEqual(filePathsByRegex(text, limit));
      if (filePathsByRegex(text).length > 0) withPaths++;
    }
    // The corpus exercises the search: many texts name paths.
    expect(withPaths).toBeGreaterThan(100);
  });

  it("agrees on random texts of path characters, delimiters, other characters and Unicode spaces", () => {
    // Characters one by one, and pieces of paths so that whole paths come up often.
    const chars = [..."ab.Z9_@+-/~", ..." \t\n\"'`(=[,:<)];>", ..."!#|$*{}\\é", "\u00a0", "\u2028", "\ufeff", "\u3000"];
    const pieces = ["src/", "a/", "../", "./", "~/", "/", "//", "x", "b.c", ".ts", ".d.ts", ".json5x", ".1", " ", "(", ":", "http://h.io/"];
    for (const alphabet of [chars, pieces, [...chars, ...pieces]]) {
      for (const text of randomTexts(18, 10000, alphabet, 24)) {
        for (const limit of [Number.POSITIVE_INFINITY, 1]) expect(filePaths(text, limit), JSON.stringify(text)).toEqual(filePathsByRegex(text, limit));
      }
    }
  });

  it("finds the paths the definition names", () => {
    expect(filePaths("x:a/b.ts,(c/d.js) e/f.g.h ~/x/y.md /abs/p.json http://h.io/a/b.js a/b.ts")).toEqual([
      "a/b.ts",
      "c/d.js",
      "e/f.g.h",
      "~/x/y.md",
      "/abs/p.json",
    ]);
    expect(filePaths("!a/b.ts a/b.ts! é/x.ts x/y.ts")).toEqual(["x/y.ts"]);
  });
});
