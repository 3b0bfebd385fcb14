/**
 * Output written in pieces (issue 18) is byte for byte what one string would be: `jsonPieces`
 * joined equals `JSON.stringify(value, null, 2)` for any JSON value (and for what JSON leaves out or
 * turns into null), the transcript's pieces joined equal the transcript, and the faster content-hash
 * normalization equals the seed's line-by-line one on any text.
 */
import fc from "fast-check";
import { Chalk } from "chalk";
import { describe, expect, it } from "vitest";
import { normalizeResult } from "../src/prune/content-hash.js";
import { formatTranscript, transcriptPieces } from "../src/render/transcript.js";
import { defaultConfig } from "../src/config/config.js";
import { renderBranch } from "../src/render/render.js";
import { loadSession } from "../src/session/session.js";
import { jsonPieces } from "../src/util/json.js";
import { sharedSessionFiles, SHARED_SESSIONS } from "./helpers.js";
import path from "node:path";

const joined = (value: unknown) => [...jsonPieces(value)].join("");

describe("jsonPieces", () => {
  it("joins to JSON.stringify(value, null, 2) for any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => joined(value) === JSON.stringify(value, null, 2)),
      { numRuns: 2000 },
    );
  });

  it("deep and wide documents: arrays of messages, nested reports, strings with newlines and quotes", () => {
    const deep = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        fc.string({ unit: fc.constantFrom("a", "\n", '"', "\\", "\u2028", "é", "\ud83d\ude00", "\ud800") }),
        fc.array(tie("node"), { maxLength: 5 }),
        fc.dictionary(fc.string({ maxLength: 4 }), tie("node"), { maxKeys: 4 }),
        fc.integer(),
        fc.double(),
        fc.constant(null),
      ),
    })).node;
    fc.assert(
      fc.property(deep, (value) => joined({ doc: value, list: [value, [value]] }) === JSON.stringify({ doc: value, list: [value, [value]] }, null, 2)),
      { numRuns: 1000 },
    );
  });

  it("leaves out and nulls what JSON does; calls toJSON", () => {
    const value = {
      a: undefined,
      f: () => 1,
      s: Symbol("x"),
      list: [undefined, () => 1, 1, { when: new Date(0), nested: [{ x: undefined }] }],
      date: new Date(86_400_000),
      empty: { arr: [], obj: {} },
      custom: { toJSON: () => undefined },
      inList: [{ toJSON: () => "json" }],
    };
    expect(joined(value)).toBe(JSON.stringify(value, null, 2));
    expect(joined([])).toBe("[]");
    expect(joined({})).toBe("{}");
    expect(joined("text")).toBe('"text"');
    expect(joined(undefined)).toBe("");
  });
});

describe("transcriptPieces", () => {
  it("joins to the transcript on every shared session", async () => {
    const c = new Chalk({ level: 1 });
    for (const name of sharedSessionFiles()) {
      const session = await loadSession(path.join(SHARED_SESSIONS, name));
      const messages = renderBranch(session.branch, defaultConfig()).afterAgent;
      const pieces = [...transcriptPieces(messages, c)];
      expect(pieces.join(""), name).toBe(formatTranscript(messages, c));
      for (const piece of pieces) expect(piece.endsWith("\n"), name).toBe(true);
    }
  });
});

describe("normalizeResult", () => {
  /** The seed's definition, line by line. */
  const byLines = (text: string) =>
    text
      .replace(/\r\n/g, "\n")
      .split("\n")
      .map((line) => line.replace(/[ \t]+$/, ""))
      .join("\n")
      .trim();

  it("equals the line-by-line definition on any text", () => {
    const unit = fc.constantFrom("a", " ", "\t", "\n", "\r", "\u2028", "\u00a0", "\v", "x");
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 60 }), (text) => normalizeResult(text) === byLines(text)),
      { numRuns: 20000 },
    );
  });
});
