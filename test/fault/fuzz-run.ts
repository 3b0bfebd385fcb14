/**
 * The fuzz runner: every input of a share of the corpus through every command, in process (the
 * real `main()`), counting what must never happen: exit codes outside 0–3, stack traces or
 * "unexpected failure", read-only commands that changed the file, `run` or `compact` changing the
 * original bytes or leaving a torn tail, files Pi could open before but not after them,
 * journal/lock/temporary leftovers, and the outside canary's text in any output.
 */
import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { runCli } from "../cli-harness.js";
import { corpus, type FuzzInput } from "./fuzz-corpus.js";
import { hasStackTrace, leftovers, sha256, tailIsWhole } from "./support.js";

export const CANARY = "CANARY-7f3a";

/** The commands every input goes through (`run` last: it writes). */
const READERS = (f: string): string[][] => [
  ["render", f],
  ["render", f, "--dry-run", "--json"],
  ["query", "t1", "call_1", "--session", f, "--json"],
  ["query", "t1", "--session", f, "--format", "tool"],
  ["metrics", f, "--json"],
  ["budget", f, "--json"],
];

/** The writing commands, one after the other on the same file. */
const WRITERS = (f: string): string[][] => [
  ["run", f, "--force"],
  ["compact", f, "--force", "--keep-recent-tokens", "200"],
];

export interface FuzzReport {
  inputs: number;
  commands: number;
  failures: string[];
}

/**
 * Whether the parentId walk from the last entry (Pi's leaf) runs in a circle: Pi 1.6's
 * `getBranch` would never end there, so such a file is one Pi cannot open (found without Pi).
 */
function branchCycles(bytes: Buffer): boolean {
  const byId = new Map<string, { parentId?: unknown }>();
  let last: { parentId?: unknown } | null = null;
  for (const line of bytes.toString("utf8").split("\n")) {
    try {
      const e = JSON.parse(line);
      if (e && typeof e === "object" && e.type !== "session" && e.id !== undefined) {
        byId.set(e.id, e);
        last = e;
      }
    } catch {
      // skipped by Pi too
    }
  }
  const seen = new Set<unknown>();
  for (let e = last; e; e = typeof e.parentId === "string" ? (byId.get(e.parentId) ?? null) : null) {
    if (seen.has(e)) return true;
    seen.add(e);
  }
  return false;
}

/** Whether Pi 1.6 opens the file (on a copy: its loader may repair or migrate what it opens). */
function piOpens(Pi: any, file: string): boolean {
  if (branchCycles(readFileSync(file))) return false;
  const copy = `${file}.pi.jsonl`;
  cpSync(file, copy);
  try {
    const sm = Pi.SessionManager.open(copy);
    sm.buildSessionContext();
    return true;
  } catch {
    return false;
  } finally {
    rmSync(copy, { force: true });
  }
}

function checkCommand(label: string, r: { code: number; stdout: string; stderr: string }, failures: string[]): void {
  if (![0, 1, 2, 3].includes(r.code)) failures.push(`${label}: exit ${r.code}`);
  if (hasStackTrace(r.stderr)) failures.push(`${label}: stack trace or unexpected failure: ${r.stderr.slice(0, 300)}`);
  if (r.stdout.includes(CANARY) || r.stderr.includes(CANARY)) failures.push(`${label}: the outside canary was read`);
}

async function fuzzOne(input: FuzzInput, dir: string, Pi: any, failures: string[]): Promise<number> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "s.jsonl");
  writeFileSync(file, input.bytes);
  const before = sha256(input.bytes);
  const env = { NO_COLOR: "1", CONDENSE_NOW: "2026-04-01T00:00:00.000Z" };
  let commands = 0;
  for (const args of READERS(file)) {
    if (process.env.FUZZ_TRACE) appendFileSync(process.env.FUZZ_TRACE, `${input.name} | ${args[0]}\n`);
    const r = await runCli(args, env);
    commands++;
    checkCommand(`${input.name} | ${args[0]} ${args.slice(2).join(" ")}`, r, failures);
    if (sha256(readFileSync(file)) !== before) failures.push(`${input.name} | ${args[0]}: a read-only command changed the file`);
  }
  const piBefore = piOpens(Pi, file);
  for (const args of WRITERS(file)) {
    const label = `${input.name} | ${args[0]}`;
    if (process.env.FUZZ_TRACE) appendFileSync(process.env.FUZZ_TRACE, `${label}\n`);
    const r = await runCli(args, env);
    commands++;
    checkCommand(label, r, failures);
    const after = readFileSync(file);
    if (after.length < input.bytes.length || sha256(after.subarray(0, input.bytes.length)) !== before) failures.push(`${label}: original bytes changed`);
    else if (after.length > input.bytes.length && !tailIsWhole(after, input.bytes.length)) failures.push(`${label}: torn tail`);
    if (piBefore && !piOpens(Pi, file)) failures.push(`${label}: Pi could open the file before, not after`);
    const left = leftovers(file);
    if (left.length > 0) failures.push(`${label}: leftovers ${left.join(", ")}`);
  }
  return commands;
}

/**
 * Run share `part` of `parts` of the corpus (`seeds` seeds per mutator) in `dir`.
 * @returns how many inputs and commands ran, and every failure (input, command, what)
 */
export async function fuzzShare(part: number, parts: number, seeds: number, dir: string, Pi: any): Promise<FuzzReport> {
  const canary = path.join(dir, "outside", "canary.txt");
  mkdirSync(path.dirname(canary), { recursive: true });
  writeFileSync(canary, CANARY);
  const all = corpus(seeds, canary);
  const mine = all.filter((_, i) => i % parts === part);
  const failures: string[] = [];
  let commands = 0;
  // A folder of its own per share: a share that timed out goes on in the background, and must not
  // wipe or change the files of the next one (seen: one half timed out under load, and the other
  // then reported 1,302 "a read-only command changed the file").
  for (const input of mine) commands += await fuzzOne(input, path.join(dir, `work-${part}`), Pi, failures);
  return { inputs: mine.length, commands, failures };
}
