/**
 * The shape of `src/` (ARCHITECTURE.md): folders are layers, and a module imports only from its own
 * folder or from a lower layer — no import runs uphill and no import cycle exists, type-only imports
 * included. Also: no function longer than 80 lines, no `as unknown as` double cast.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseAst } from "rolldown/parseAst";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers.js";

/** Lowest first; folders on one line are peers and do not import each other. */
const LAYERS: string[][] = [
  ["util"],
  ["session"],
  ["config"],
  ["entries"],
  ["context"],
  ["summarize"],
  ["prune", "compact"],
  ["chain"],
  ["render"],
  ["report", "query"],
  ["pipeline"],
  ["cli"],
];
const MAX_FUNCTION_LINES = 80;

const SRC = path.join(REPO_ROOT, "src");
const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as const)));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

type Node = { type: string; start: number; end: number; [key: string]: unknown };

function walk(node: unknown, visit: (n: Node) => void): void {
  if (Array.isArray(node)) {
    for (const child of node) walk(child, visit);
    return;
  }
  if (!node || typeof node !== "object" || typeof (node as Node).type !== "string") return;
  visit(node as Node);
  for (const [key, value] of Object.entries(node)) if (key !== "type" && value && typeof value === "object") walk(value, visit);
}

interface Module {
  file: string;
  folder: string;
  text: string;
  ast: Node;
  imports: string[];
}

const modules: Module[] = sources(SRC).map((file) => {
  const text = readFileSync(file, "utf8");
  const ast = parseAst(text, { lang: "ts" }, file) as unknown as Node;
  const imports: string[] = [];
  walk(ast, (n) => {
    const source =
      n.type === "ImportDeclaration" || n.type === "ExportNamedDeclaration" || n.type === "ExportAllDeclaration" || n.type === "ImportExpression"
        ? (n.source as { value?: unknown } | null)?.value
        : undefined;
    if (typeof source === "string" && source.startsWith(".")) imports.push(path.resolve(path.dirname(file), source.replace(/\.js$/, ".ts")));
  });
  return { file, folder: path.relative(SRC, file).split(path.sep)[0], text, ast, imports };
});
const rel = (file: string) => path.relative(REPO_ROOT, file);

describe("architecture", () => {
  it("places every folder of src/ in a layer", () => {
    const folders = [...new Set(modules.map((m) => m.folder))].filter((f) => !f.endsWith(".ts"));
    expect(folders.filter((f) => !rank.has(f))).toEqual([]);
  });

  it("imports only from the same folder or a lower layer", () => {
    const uphill: string[] = [];
    for (const m of modules) {
      for (const target of m.imports) {
        const folder = path.relative(SRC, target).split(path.sep)[0];
        if (folder === m.folder) continue;
        if ((rank.get(folder) ?? Infinity) >= (rank.get(m.folder) ?? -Infinity)) uphill.push(`${rel(m.file)} → ${rel(target)}`);
      }
    }
    expect(uphill).toEqual([]);
  });

  it("has no import cycle", () => {
    const graph = new Map(modules.map((m) => [m.file, m.imports.filter((t) => modules.some((o) => o.file === t))]));
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const stack: string[] = [];
    const visit = (file: string) => {
      state.set(file, "open");
      stack.push(file);
      for (const next of graph.get(file) ?? []) {
        if (state.get(next) === "open") cycles.push([...stack.slice(stack.indexOf(next)), next].map(rel).join(" → "));
        else if (!state.has(next)) visit(next);
      }
      stack.pop();
      state.set(file, "done");
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  it(`has no function longer than ${MAX_FUNCTION_LINES} lines`, () => {
    const long: string[] = [];
    for (const m of modules) {
      const lineAt = (offset: number) => m.text.slice(0, offset).split("\n").length;
      walk(m.ast, (n) => {
        if (n.type !== "FunctionDeclaration" && n.type !== "FunctionExpression" && n.type !== "ArrowFunctionExpression") return;
        const lines = lineAt(n.end) - lineAt(n.start) + 1;
        if (lines > MAX_FUNCTION_LINES) long.push(`${rel(m.file)}:${lineAt(n.start)} (${lines} lines)`);
      });
    }
    expect(long).toEqual([]);
  });

  it("has no `as unknown as` double cast", () => {
    expect(modules.filter((m) => m.text.includes("as unknown as")).map((m) => rel(m.file))).toEqual([]);
  });
});
