/**
 * The mutated-session corpus of the fuzz suite: every fixture and every shared session (cut to its
 * first 24 KB at a line end), each mutated by every kind below with fixed seeds (1,069 inputs with
 * today's 62 bases), plus hand-made hostile inputs. Deterministic: the same seed gives the same bytes.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { FIXTURES, SHARED_SESSIONS } from "../helpers.js";
import { seeded } from "./support.js";

export interface FuzzInput {
  name: string;
  bytes: Buffer;
}

type Rand = () => number;
type Mutator = (bytes: Buffer, rand: Rand) => Buffer;

const pick = <T>(xs: T[], rand: Rand): T => xs[Math.floor(rand() * xs.length)];
const lines = (b: Buffer): string[] => b.toString("utf8").split("\n");
const join = (ls: string[]): Buffer => Buffer.from(ls.join("\n"), "utf8");
const parsed = (b: Buffer): { i: number; e: Record<string, any> }[] =>
  lines(b).flatMap((l, i) => {
    try {
      const e = JSON.parse(l);
      return e && typeof e === "object" && !Array.isArray(e) ? [{ i, e }] : [];
    } catch {
      return [];
    }
  });

/** Replace parsed line `i` with `e` re-serialized. */
function rewrite(b: Buffer, edits: { i: number; e: unknown }[]): Buffer {
  const ls = lines(b);
  for (const { i, e } of edits) ls[i] = JSON.stringify(e);
  return join(ls);
}

export const MUTATORS: Record<string, Mutator> = {
  truncate: (b, r) => b.subarray(0, Math.floor(r() * b.length)),
  bitflips: (b, r) => {
    const out = Buffer.from(b);
    const n = 1 + Math.floor(r() * 8);
    for (let k = 0; k < n && out.length > 0; k++) out[Math.floor(r() * out.length)] ^= 1 << Math.floor(r() * 8);
    return out;
  },
  swapLines: (b, r) => {
    const ls = lines(b);
    const i = Math.floor(r() * ls.length);
    const j = Math.floor(r() * ls.length);
    [ls[i], ls[j]] = [ls[j], ls[i]];
    return join(ls);
  },
  duplicateLine: (b, r) => {
    const ls = lines(b);
    const i = Math.floor(r() * ls.length);
    ls.splice(i, 0, ls[i]);
    return join(ls);
  },
  invalidUtf8: (b, r) => {
    const bad = pick([Buffer.from([0xc3, 0x28]), Buffer.from([0xff]), Buffer.from([0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80])], r);
    const at = Math.floor(r() * b.length);
    return Buffer.concat([b.subarray(0, at), bad, b.subarray(at)]);
  },
  crlf: (b) => Buffer.from(b.toString("latin1").replaceAll("\n", "\r\n"), "latin1"),
  nulBytes: (b, r) => {
    const at = Math.floor(r() * b.length);
    return Buffer.concat([b.subarray(0, at), Buffer.alloc(1 + Math.floor(r() * 4)), b.subarray(at)]);
  },
  bom: (b) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), b]),
  parentCycle: (b, r) => {
    const es = parsed(b).filter(({ e }) => typeof e.id === "string" && e.type !== "session");
    if (es.length < 2) return b;
    const a = Math.floor(r() * (es.length - 1));
    const d = a + 1 + Math.floor(r() * (es.length - a - 1));
    return rewrite(b, [{ i: es[a].i, e: { ...es[a].e, parentId: es[d].e.id } }]);
  },
  duplicateIds: (b, r) => {
    const es = parsed(b).filter(({ e }) => typeof e.id === "string" && e.type !== "session");
    if (es.length < 2) return b;
    const x = pick(es, r);
    const y = pick(es, r);
    return rewrite(b, [{ i: y.i, e: { ...y.e, id: x.e.id } }]);
  },
  deepNesting: (b, r) => {
    const ls = lines(b);
    const i = Math.max(1, Math.floor(r() * ls.length));
    const depth = pick([2_000, 20_000, 100_000], r);
    const deep = r() < 0.5 ? `${"[".repeat(depth)}${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
    ls.splice(
      i,
      0,
      `{"type":"message","id":"deep0001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"x","toolName":"bash","content":${deep},"isError":false,"timestamp":1}}`,
    );
    return join(ls);
  },
  wrongTypes: (b, r) => {
    const es = parsed(b).filter(({ e }) => e.type !== "session");
    if (es.length === 0) return b;
    const x = pick(es, r);
    const e = structuredClone(x.e);
    const k = Math.floor(r() * 7);
    if (k === 0 && e.message) e.message.content = "plain string content";
    if (k === 1) e.timestamp = 12345;
    if (k === 2) e.parentId = 0;
    if (k === 3 && e.message) e.message.role = 42;
    if (k === 4 && e.message) e.message.content = [{ type: "toolCall", id: 7, name: null, arguments: "x" }, null, 3];
    if (k === 5) e.data = { toolCalls: "nope", refs: [null], version: "x" };
    if (k === 6) e.id = { not: "a string" };
    return rewrite(b, [{ i: x.i, e }]);
  },
  protoKeys: (b, r) => {
    const es = parsed(b).filter(({ e }) => e.type !== "session");
    if (es.length === 0) return b;
    const x = pick(es, r);
    const ls = lines(b);
    ls[x.i] = ls[x.i].replace(/^\{/, '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},');
    return join(ls);
  },
};

/** The bases: every fixture and every shared session (first 24 KB, cut at a line end). */
export function baseCorpus(): { name: string; bytes: Buffer }[] {
  const out: { name: string; bytes: Buffer }[] = [];
  for (const f of readdirSync(FIXTURES)
    .filter((n) => n.endsWith(".jsonl"))
    .sort())
    out.push({ name: f, bytes: readFileSync(path.join(FIXTURES, f)) });
  if (existsSync(SHARED_SESSIONS)) {
    for (const f of readdirSync(SHARED_SESSIONS)
      .filter((n) => n.endsWith(".jsonl"))
      .sort()) {
      const b = readFileSync(path.join(SHARED_SESSIONS, f));
      const cut = b.length > 24_000 ? b.lastIndexOf(0x0a, 24_000) + 1 : b.length;
      out.push({ name: `shared/${f}`, bytes: b.subarray(0, cut) });
    }
  }
  return out;
}

/** Hand-made hostile inputs beyond the mutations. */
export function handMade(canaryPath: string): FuzzInput[] {
  const header = (extra: Record<string, unknown>) =>
    JSON.stringify({ type: "session", version: 3, id: "f0000000-0000-7000-8000-00000000000f", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/", ...extra });
  const msg = (id: string, parentId: string | null, message: unknown) =>
    JSON.stringify({ type: "message", id, parentId, timestamp: "2026-01-01T00:00:01.000Z", message });
  const user = (text: string) => ({ role: "user", content: text, timestamp: 1 });
  const record = (spillPath: string) =>
    JSON.stringify({
      type: "custom",
      customType: "context-prune-index",
      id: "c0000001",
      parentId: "m0000001",
      timestamp: "2026-01-01T00:00:02.000Z",
      data: {
        version: 1,
        toolCalls: [
          {
            toolCallId: "x1",
            toolName: "bash",
            args: {},
            resultText: "",
            resultPreview: "preview",
            spillPath,
            spillBytes: 10,
            isError: false,
            turnIndex: 0,
            resultTimestamp: 5,
          },
        ],
        refs: [{ shortId: "t1", toolCallId: "x1", resultTimestamp: 5 }],
      },
    });
  const inputs: [string, string][] = [
    ["header missing", `${msg("m0000001", null, user("hi"))}\n`],
    ["header version 99", `${header({ version: 99 })}\n${msg("m0000001", null, user("hi"))}\n`],
    ["header numeric id", `${header({ id: 12345 })}\n${msg("m0000001", null, user("hi"))}\n`],
    ["header only", `${header({})}\n`],
    ["empty", ""],
    ["only newlines", "\n\n\n"],
    ["a JSON array per line", '[1,2]\n["a"]\n'],
    ["self-parent", `${header({})}\n${msg("m0000001", "m0000001", user("hi"))}\n`],
    ...["/etc/passwd", "/proc/self/environ", "/dev/zero", canaryPath, "../../../../etc/hostname", "relative.txt"].map((p): [string, string] => [
      `spillPath ${p}`,
      `${header({})}\n${msg("m0000001", null, user("hi"))}\n${record(p)}\n`,
    ]),
    ["control sequences everywhere", `${header({ cwd: "/\x1b]0;x\x07" })}\n${msg("m0000001", null, user("\x1b[2J\x1b]52;c;eA==\x07\u009b\u202e"))}\n`],
  ];
  return inputs.map(([name, text]) => ({ name: `hand: ${name}`, bytes: Buffer.from(text, "utf8") }));
}

/** Mutations whose result varies most with the seed: each gets `seeds` seeds, the others one. */
const MOST_RANDOM = new Set(["truncate", "bitflips", "invalidUtf8", "nulBytes"]);

/** Every mutator over every base (the most random ones with `seeds` seeds), plus the hand-made inputs. */
export function corpus(seeds: number, canaryPath: string): FuzzInput[] {
  const out: FuzzInput[] = [];
  for (const base of baseCorpus()) {
    for (const [kind, mutate] of Object.entries(MUTATORS)) {
      for (let s = 0; s < (MOST_RANDOM.has(kind) ? seeds : 1); s++) {
        const rand = seeded(1_000_003 * s + kind.length * 7919 + base.name.length);
        out.push({ name: `${base.name} ${kind} #${s}`, bytes: mutate(base.bytes, rand) });
      }
    }
  }
  return [...out, ...handMade(canaryPath)];
}
