#!/usr/bin/env node
// Behaviour-equivalence harness: runs every command of condense over every shared session and every
// fixture, on temp copies, with a fixed clock, and writes what each printed (and what `run` wrote)
// into a folder; two such folders from two builds must be byte-identical.
//
//   node scripts/equivalence.mjs capture OUT [--dist DIR]   capture with a built dist/ (default ./dist)
//   node scripts/equivalence.mjs compare A B                byte-compare two captures
//   node scripts/equivalence.mjs check [--base REF] [--keep DIR]
//        build REF (default: main) in a temporary git worktree and this checkout, capture both,
//        compare; exit 1 on any difference. --keep DIR keeps both captures there.
//
// Per file, on a copy at a fixed temp path (paths appear in outputs and in spill records), with
// CONDENSE_NOW fixed, an empty Pi folder, no colors, no worker threads, and the copy's mtime set to
// a fixed old date (so `run` never takes it for a session Pi is writing):
//   run --dry-run --json, render (text, --format json, --json), render --dry-run (--format json, --json),
//   metrics --json, budget --json; then run --json (appended bytes, or the whole file after a
//   migration, plus every file it wrote beside the session), a second run --json (must append
//   nothing), and after the run: render --format json, render --json, metrics --json, query --json
//   and query (text) of every short ref and every raw tool-call id the file records, plus one block id;
//   then, on a fresh copy, render --dry-run --json and run --json with other settings (agent-message
//   batching, rolling window 0, no trivial skip); then, on another fresh copy (builds that have it),
//   compact --dry-run --json, compact --json keeping 1000 tokens (and the bytes it wrote), render
//   --format json after it, and a second compact --json; then (builds that have it) undo --json, whether
//   the file is back to its bytes before the compaction, and a second undo --json.
// v1/v2 copies get --migrate. Wall times (`wallMs`) are removed from the captured JSON, and the
// undo record's write id, inode, device and times from the files written beside the session.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const NOW = "2026-01-01T00:00:00.000Z";
const OLD_MTIME = new Date("2025-01-01T00:00:00.000Z");
const SCRATCH = path.join(os.tmpdir(), "condense-equivalence");

function usage() {
  console.error(
    "usage: node scripts/equivalence.mjs capture OUT [--dist DIR]\n" +
      "       node scripts/equivalence.mjs compare A B\n" +
      "       node scripts/equivalence.mjs check [--base REF] [--keep DIR]",
  );
  process.exit(2);
}

function option(args, name) {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  if (value === undefined) usage();
  args.splice(i, 2);
  return value;
}

/** Every input: the shared sessions (when present) and the fixtures, as [label, path]. */
function inputs(root) {
  const out = [];
  const shared = path.resolve(root, "../shared/sessions");
  if (existsSync(shared)) {
    for (const f of readdirSync(shared).sort()) if (f.endsWith(".jsonl")) out.push([`shared/${f}`, path.join(shared, f)]);
  }
  const fixtures = path.join(root, "fixtures");
  for (const f of readdirSync(fixtures).sort()) if (f.endsWith(".jsonl")) out.push([`fixtures/${f}`, path.join(fixtures, f)]);
  return out;
}

/** True for a v1/v2 session (header version below 3, or none). */
function needsMigration(file) {
  const first = readFileSync(file, "utf8")
    .split("\n")
    .find((l) => l.trim() !== "");
  try {
    const header = JSON.parse(first);
    if (header?.type !== "session") return false;
    const version = Number(header.version ?? 1);
    return !Number.isNaN(version) && version < 3;
  } catch {
    return false;
  }
}

function stripWallTimes(value) {
  if (Array.isArray(value)) return value.map(stripWallTimes);
  if (value && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) if (k !== "wallMs") out[k] = stripWallTimes(v);
    return out;
  }
  return value;
}

/** Run `condense <args>` in this process and capture exit code, stdout and stderr. */
async function cli(main, args, { json = false } = {}) {
  let stdout = "";
  let stderr = "";
  const out = process.stdout.write;
  const err = process.stderr.write;
  process.stdout.write = (chunk) => {
    stdout += String(chunk);
    return true;
  };
  process.stderr.write = (chunk) => {
    stderr += String(chunk);
    return true;
  };
  let code;
  try {
    code = await main(["node", "condense", ...args]);
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
  if (json) {
    try {
      stdout = `${JSON.stringify(stripWallTimes(JSON.parse(stdout)), null, 2)}\n`;
    } catch {
      // not JSON (an error before the command printed): keep as is
    }
  }
  return `exit ${code}\n--- stdout\n${stdout}--- stderr\n${stderr}`;
}

/**
 * A file written beside the session, with what differs between two runs of the same build taken
 * out: the undo record's random write id, inode, device and wall-clock times.
 */
function stableFile(rel, text) {
  if (!rel.endsWith(".condense-undo")) return text;
  const volatile = new Set(["writeId", "dev", "ino", "startedAt", "committedAt"]);
  return text
    .split("\n")
    .map((line) => (line ? JSON.stringify(JSON.parse(line), (k, v) => (volatile.has(k) ? "…" : v)) : line))
    .join("\n");
}

/** Files below `dir` other than `except`, as relative paths, sorted. */
function filesBelow(dir, except) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (full !== except) out.push(path.relative(dir, full));
    }
  };
  walk(dir);
  return out.sort();
}

/** Short refs, raw tool-call ids and block ids the session's pruner entries record. */
function recordedRefs(file) {
  const refs = new Set();
  const ids = new Set();
  const blocks = new Set();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.includes("context-prune-")) continue;
    let e;
    try {
      e = JSON.parse(line);
    } catch {
      continue;
    }
    const lists = [e?.data?.refs, e?.details?.toolCallRefs].filter(Array.isArray);
    for (const list of lists) for (const r of list) if (typeof r?.shortId === "string") refs.add(r.shortId);
    if (Array.isArray(e?.data?.toolCalls)) for (const r of e.data.toolCalls) if (typeof r?.toolCallId === "string") ids.add(r.toolCallId);
    if (typeof e?.data?.blockId === "string") blocks.add(e.data.blockId);
  }
  const byNumber = (a, b) => Number(a.slice(1)) - Number(b.slice(1)) || (a < b ? -1 : 1);
  return { refs: [...refs].sort(byNumber), ids: [...ids].sort(), blocks: [...blocks].sort(byNumber) };
}

/**
 * `compact` on a fresh copy (in a folder of its own, so no backup of an earlier run is in the way):
 * a dry run with Pi's defaults, a compaction that keeps 1000 tokens (small sessions have something
 * to compact too), the bytes it wrote, the render after it, and a second compact (already compacted).
 */
async function captureCompact(main, source, dir, save, migrate, hasUndo) {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, path.basename(source));
  copyFileSync(source, file);
  utimesSync(file, OLD_MTIME, OLD_MTIME);
  save("22-compact-dry.txt", await cli(main, ["compact", "--dry-run", "--json", ...migrate, file], { json: true }));
  const before = readFileSync(file);
  save("23-compact.txt", await cli(main, ["compact", "--json", "--keep-recent-tokens", "1000", ...migrate, file], { json: true }));
  const after = readFileSync(file);
  const appended = after.subarray(0, before.length).equals(before) ? after.subarray(before.length) : null;
  save("24-compact-bytes.txt", appended ? `appended ${appended.length} bytes\n${appended}` : `rewritten, ${after.length} bytes\n${after}`);
  save("25-render-after-compact-json.txt", await cli(main, ["render", "--format", "json", file]));
  utimesSync(file, OLD_MTIME, OLD_MTIME);
  save("26-compact-again.txt", await cli(main, ["compact", "--json", "--keep-recent-tokens", "1000", ...migrate, file], { json: true }));
  if (!hasUndo) return;
  // Builds with `undo`: it removes the compaction again (write id and times left out), to the byte.
  const undone = await cli(main, ["undo", "--json", file], { json: true });
  save("27-undo.txt", undone.replace(/"(writeId|startedAt|committedAt)": "[^"]*"/g, '"$1": "…"'));
  // A v1/v2 copy was migrated in place first: undo leaves the migration (its backup holds the original).
  const undoneTo = Number(/"sizeAfter": (\d+)/.exec(undone)?.[1] ?? -1);
  const expected = undoneTo < 0 ? after : migrate.length > 0 ? after.subarray(0, undoneTo) : before;
  const what =
    undoneTo < 0
      ? "nothing to undo (compact wrote no entry): the file as compact left it"
      : migrate.length > 0
        ? "the migrated bytes before the compaction entry"
        : "the bytes before the compaction";
  save("28-undo-bytes.txt", `${what}: ${readFileSync(file).equals(expected) ? "yes" : "no"}\n`);
  save("29-undo-again.txt", await cli(main, ["undo", "--json", file], { json: true }));
}

/** Capture every command over every input with the build in `dist`, into `outDir`. */
async function capture(outDir, dist) {
  const entry = path.join(dist, "cli/main.js");
  if (!existsSync(entry)) throw new Error(`${entry} is missing; build first (npm run build)`);
  const work = path.join(SCRATCH, "work");
  const piDir = path.join(SCRATCH, "pi");
  rmSync(SCRATCH, { recursive: true, force: true });
  mkdirSync(piDir, { recursive: true });
  Object.assign(process.env, { CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1", CONDENSE_WORKERS: "0" });
  delete process.env.PI_CODING_AGENT_SESSION_DIR;
  delete process.env.PI_SESSION_FILE;
  delete process.env.FORCE_COLOR;
  const { main } = await import(pathToFileURL(entry).href);
  // Builds from before `compact` existed capture everything else.
  const hasCompact = existsSync(path.join(dist, "pipeline/compact.js"));
  const hasUndo = existsSync(path.join(dist, "pipeline/undo.js"));
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const list = inputs(ROOT);
  let n = 0;
  for (const [label, source] of list) {
    n++;
    if (process.stderr.isTTY) process.stderr.write(`\r[${n}/${list.length}] ${label}`.padEnd(80));
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    process.chdir(work);
    const file = path.join(work, path.basename(source));
    const fresh = () => {
      copyFileSync(source, file);
      utimesSync(file, OLD_MTIME, OLD_MTIME);
    };
    fresh();
    const dest = path.join(outDir, label.replace(/\//g, "__"));
    mkdirSync(dest, { recursive: true });
    const save = (name, text) => writeFileSync(path.join(dest, name), text);
    const migrate = needsMigration(source) ? ["--migrate"] : [];

    save("01-run-dry.txt", await cli(main, ["run", "--dry-run", "--json", ...migrate, file], { json: true }));
    save("02-render-text.txt", await cli(main, ["render", file]));
    save("03-render-format-json.txt", await cli(main, ["render", "--format", "json", file]));
    save("04-render-json.txt", await cli(main, ["render", "--json", file]));
    save("05-render-dry-format-json.txt", await cli(main, ["render", "--dry-run", "--format", "json", file]));
    save("06-render-dry-json.txt", await cli(main, ["render", "--dry-run", "--json", file]));
    save("07-metrics.txt", await cli(main, ["metrics", "--json", file]));
    save("08-budget.txt", await cli(main, ["budget", "--json", file]));

    const before = readFileSync(file);
    save("09-run.txt", await cli(main, ["run", "--json", ...migrate, file], { json: true }));
    const after = readFileSync(file);
    const appended = after.subarray(0, before.length).equals(before) ? after.subarray(before.length) : null;
    save("10-run-bytes.txt", appended ? `appended ${appended.length} bytes\n${appended}` : `rewritten, ${after.length} bytes\n${after}`);
    const sidecars = filesBelow(work, file);
    save("11-run-files.txt", sidecars.map((rel) => `=== ${rel}\n${stableFile(rel, readFileSync(path.join(work, rel), "utf8"))}\n`).join("") || "(none)\n");
    utimesSync(file, OLD_MTIME, OLD_MTIME);
    save("12-run-again.txt", await cli(main, ["run", "--json", ...migrate, file], { json: true }));
    const rerun = readFileSync(file);
    save("13-run-again-bytes.txt", `appended ${rerun.length - after.length} bytes\n${rerun.subarray(after.length)}`);

    save("14-render-after-format-json.txt", await cli(main, ["render", "--format", "json", file]));
    save("15-render-after-json.txt", await cli(main, ["render", "--json", file]));
    save("16-metrics-after.txt", await cli(main, ["metrics", "--json", file]));
    const { refs, ids, blocks } = recordedRefs(file);
    const asked = [...refs, ...ids, ...blocks.slice(0, 1)];
    if (asked.length > 0) {
      save("17-query-json.txt", await cli(main, ["query", "--json", "--session", file, ...asked]));
      save("18-query-text.txt", await cli(main, ["query", "--session", file, ...asked]));
    } else save("17-query-json.txt", "(no refs)\n");

    // The other settings: turns merged per user message, every closed chain compressed, no trivial skip.
    const variant = ["--set", "batchingMode=agent-message", "--set", "chainCompression.rollingWindow=0", "--set", "minBatchChars=0"];
    fresh();
    save("19-variant-render-dry-json.txt", await cli(main, ["render", "--dry-run", "--json", ...variant, file]));
    const plain = readFileSync(file);
    save("20-variant-run.txt", await cli(main, ["run", "--json", "--force", ...migrate, ...variant, file], { json: true }));
    const changed = readFileSync(file);
    const tail = changed.subarray(0, plain.length).equals(plain) ? changed.subarray(plain.length) : null;
    save("21-variant-run-bytes.txt", tail ? `appended ${tail.length} bytes\n${tail}` : `rewritten, ${changed.length} bytes\n${changed}`);

    if (hasCompact) await captureCompact(main, source, path.join(work, "compact"), save, migrate, hasUndo);
  }
  if (process.stderr.isTTY) process.stderr.write("\n");
  process.chdir(ROOT);
  rmSync(SCRATCH, { recursive: true, force: true });
  console.log(`captured ${list.length} inputs into ${outDir}`);
}

function digestTree(dir) {
  const out = new Map();
  for (const rel of filesBelow(dir, null))
    out.set(
      rel,
      createHash("sha256")
        .update(readFileSync(path.join(dir, rel)))
        .digest("hex"),
    );
  return out;
}

/** Compare two captures file by file; print what differs. @returns the number of differences */
function compare(a, b) {
  const da = digestTree(a);
  const db = digestTree(b);
  const names = [...new Set([...da.keys(), ...db.keys()])].sort();
  let differences = 0;
  for (const name of names) {
    if (da.get(name) === db.get(name)) continue;
    differences++;
    if (!da.has(name) || !db.has(name)) console.log(`only in ${da.has(name) ? a : b}: ${name}`);
    else console.log(`differs: ${name}`);
  }
  console.log(differences === 0 ? `identical: ${names.length} files in ${a} and ${b}` : `${differences} of ${names.length} files differ between ${a} and ${b}`);
  return differences;
}

/** Build `ref` in a temporary worktree (sharing this checkout's node_modules) and return its dist. */
function buildRef(ref, into) {
  execFileSync("git", ["-C", ROOT, "worktree", "add", "--detach", into, ref], { stdio: "inherit" });
  symlinkSync(path.join(ROOT, "node_modules"), path.join(into, "node_modules"), "dir");
  execFileSync(path.join(ROOT, "node_modules/.bin/tsc"), ["-p", path.join(into, "tsconfig.json")], { stdio: "inherit" });
  return path.join(into, "dist");
}

async function check(args) {
  const base = option(args, "--base") ?? "main";
  const keep = option(args, "--keep");
  const tmp = mkdtempSync(path.join(os.tmpdir(), "condense-equivalence-check-"));
  const out = keep ? path.resolve(keep) : tmp;
  const tree = path.join(tmp, "base-tree");
  try {
    const baseDist = buildRef(base, tree);
    execFileSync(path.join(ROOT, "node_modules/.bin/tsc"), ["-p", path.join(ROOT, "tsconfig.json")], { stdio: "inherit" });
    // Each capture in its own process: module state of one build never leaks into the other.
    const self = fileURLToPath(import.meta.url);
    execFileSync(process.execPath, [self, "capture", path.join(out, "base"), "--dist", baseDist], { stdio: "inherit" });
    execFileSync(process.execPath, [self, "capture", path.join(out, "head"), "--dist", path.join(ROOT, "dist")], { stdio: "inherit" });
    const differences = compare(path.join(out, "base"), path.join(out, "head"));
    process.exitCode = differences === 0 ? 0 : 1;
  } finally {
    execFileSync("git", ["-C", ROOT, "worktree", "remove", "--force", tree], { stdio: "inherit" });
    rmSync(keep ? tree : tmp, { recursive: true, force: true });
  }
}

const [command, ...rest] = process.argv.slice(2);
if (command === "capture") {
  const dist = option(rest, "--dist") ?? path.join(ROOT, "dist");
  if (rest.length !== 1) usage();
  await capture(path.resolve(rest[0]), path.resolve(dist));
} else if (command === "compare") {
  if (rest.length !== 2) usage();
  process.exitCode = compare(path.resolve(rest[0]), path.resolve(rest[1])) === 0 ? 0 : 1;
} else if (command === "check") {
  await check(rest);
} else usage();
