/**
 * Shared pieces of the fault-injection suites: a private build of condense for child processes
 * (so a stale `dist/` or another test's build can never be what a child runs), a seeded random
 * source, a generated large session, and the invariants every suite counts.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { FIXTURES, REPO_ROOT, SHARED_SESSIONS } from "../helpers.js";

/** A build of src/ in its own folder (inside the repository, so packages resolve), with its bin/. */
export function buildForChildren(name: string): { bin: string; dist: string; cleanup: () => void } {
  const root = path.join(REPO_ROOT, "node_modules/.cache/condense-fault", `${name}-${process.pid}`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(path.join(root, "bin"), { recursive: true });
  const tsc = path.join(REPO_ROOT, "node_modules/.bin/tsc");
  const built = spawnSync(tsc, ["-p", path.join(REPO_ROOT, "tsconfig.json"), "--outDir", path.join(root, "dist")], { encoding: "utf8" });
  if (built.status !== 0) throw new Error(`build failed: ${built.stdout}${built.stderr}`);
  copyFileSync(path.join(REPO_ROOT, "bin/condense.js"), path.join(root, "bin/condense.js"));
  copyFileSync(path.join(REPO_ROOT, "package.json"), path.join(root, "package.json")); // the version is read from it
  return { bin: path.join(root, "bin/condense.js"), dist: path.join(root, "dist"), cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** mulberry32: a small seeded PRNG; returns floats in [0, 1). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const sha256 = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

/** The session the generator repeats: a real shared one when present, else a fixture. */
function generatorSource(): string {
  const shared = path.join(SHARED_SESSIONS, "gjc-04-awesome-agent-ide.v3.jsonl");
  return existsSync(shared) ? shared : path.join(FIXTURES, "example-session.jsonl");
}

/**
 * A large v3 session: the entries of a real session repeated (fresh unique ids, tool-call ids
 * suffixed per repetition, timestamps shifted by a day) until `targetBytes`. Deterministic.
 */
export function generateSession(file: string, targetBytes: number): void {
  const lines = readFileSync(generatorSource(), "utf8").split("\n").filter(Boolean);
  let header: Record<string, unknown> | null = null;
  const entries: Record<string, any>[] = [];
  for (const l of lines) {
    let e: Record<string, any>;
    try {
      e = JSON.parse(l);
    } catch {
      continue; // the source's own malformed lines are not repeated
    }
    if (e.type === "session") header ??= e;
    else if (e.type !== "compaction") entries.push(e);
  }
  const out: string[] = [JSON.stringify({ ...header, id: "0a0b0c0d-0000-7000-8000-00000000f00d" })];
  let size = out[0].length + 1;
  let counter = 0;
  let last: string | null = null;
  for (let rep = 0; size < targetBytes; rep++) {
    const ids = new Map<string, string>();
    for (const e0 of entries) {
      const e = structuredClone(e0);
      const id = createHash("sha256").update(`gen${counter++}`).digest("hex").slice(0, 8);
      e.parentId = e0.parentId == null ? last : (ids.get(e0.parentId) ?? last);
      ids.set(e.id, id);
      e.id = id;
      if (e.targetId) e.targetId = ids.get(e.targetId) ?? e.targetId;
      const m = e.message;
      if (m) {
        if (typeof m.timestamp === "number") m.timestamp += rep * 86_400_000;
        if (m.toolCallId) m.toolCallId += `_r${rep}`;
        if (Array.isArray(m.content)) for (const b of m.content) if (b?.type === "toolCall") b.id += `_r${rep}`;
      }
      const text = JSON.stringify(e);
      out.push(text);
      size += Buffer.byteLength(text) + 1;
      last = id;
    }
  }
  writeFileSync(file, `${out.join("\n")}\n`);
}

/** A stack trace or an uncaught error in stderr (condense's own messages start with `error:`/`warning:`). */
export function hasStackTrace(stderr: string): boolean {
  return /^\s+at .+:\d+:\d+\)?$/m.test(stderr) || /^(?!error:|warning:)\w*Error: /m.test(stderr) || /unexpected failure/.test(stderr);
}

/** Files beside `file` that a settled write must not leave: journal, temporaries, a lock. */
export function leftovers(file: string): string[] {
  const dir = path.dirname(file);
  const base = path.basename(file);
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith(`${base}.condense-journal`) || name.startsWith(`${base}.lock`) || /\.tmp$/.test(name)) found.push(name);
    if (name.endsWith("-blobs")) for (const inner of readdirSync(path.join(dir, name))) if (inner.endsWith(".tmp")) found.push(`${name}/${inner}`);
  }
  return found;
}

/** True when every byte after `from` is in complete lines that parse as JSON objects or are blank. */
export function tailIsWhole(bytes: Buffer, from: number): boolean {
  if (bytes.length > from && bytes[bytes.length - 1] !== 0x0a) return false;
  const text = bytes.subarray(from).toString("utf8");
  return text.split("\n").every((line) => {
    if (line.trim() === "") return true;
    try {
      const v = JSON.parse(line);
      return !!v && typeof v === "object" && !Array.isArray(v);
    } catch {
      return false;
    }
  });
}

/** Run a process to its end: exit code, the signal that ended it, stdout and stderr. */
export function runProcess(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** What one planned run appends, for children that re-commit it (see commit-child.mjs). */
export interface PlannedWrite {
  planFile: string;
  preSize: number;
  preSha: string;
  length: number;
  appendSha: string;
  /** Byte length of the first appended line. */
  firstLine: number;
  entryIds: string[];
  sidecars: { path: string; text: string }[];
}

/**
 * Run `condense run` (in process) on `file`, record what it appended into `planFile`, then put the
 * file back as it was (its sidecars, journal and undo record removed).
 */
export async function planWrite(
  file: string,
  planFile: string,
  runCli: (...args: string[]) => Promise<{ code: number; stderr: string }>,
  args: string[] = [],
): Promise<PlannedWrite> {
  const { readUndoRecords } = await import("../../src/session/journal.js");
  const before = readFileSync(file);
  const r = await runCli("run", file, "--quiet", ...args);
  if (r.code !== 0) throw new Error(`planning run failed: ${r.stderr}`);
  const [record] = readUndoRecords(file);
  const bytes = readFileSync(file);
  const tail = bytes.subarray(record.preSize);
  const entries = tail
    .toString("utf8")
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));
  const sidecars = record.sidecars.map((s) => ({ path: s.path, text: readFileSync(s.path, "utf8") }));
  writeFileSync(planFile, JSON.stringify({ entries, sidecars, endsWithNewline: true }));
  for (const s of sidecars) rmSync(s.path, { force: true });
  rmSync(`${file}.condense-undo`, { force: true });
  writeFileSync(file, before);
  return {
    planFile,
    preSize: record.preSize,
    preSha: sha256(bytes.subarray(0, record.preSize)),
    length: record.length,
    appendSha: record.sha256,
    firstLine: tail.indexOf(0x0a) + 1,
    entryIds: record.entryIds,
    sidecars,
  };
}
