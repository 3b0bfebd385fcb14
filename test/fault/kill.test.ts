/**
 * kill -9 at any byte of the append (issue "Crash-proof", K1): on a generated large session, a
 * child process commits one planned run with the real commit code (a private build) and is killed
 * (SIGKILL) at a chosen step of the protocol or after a chosen number of appended bytes; then the
 * next condense command runs. Counted, all must be 0: final states other than "before" / "before +
 * all entries", changed original bytes, torn files, journal/lock/temporary leftovers, sidecars of a
 * rolled-back write left behind, missing undo records, crashes and stack traces of the next command.
 * Two lanes (folders) run at once so that children use the second core; the in-process next
 * commands take turns.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readUndoRecords } from "../../src/session/journal.js";
import { runCli } from "../cli-capture.js";
import { makeTempDir } from "../helpers.js";
import {
  buildForChildren,
  generateSession,
  hasStackTrace,
  leftovers,
  type PlannedWrite,
  planWrite,
  runProcess,
  seeded,
  sha256,
  tailIsWhole,
} from "./support.js";

const CHILD = path.join(__dirname, "commit-child.mjs");

interface Lane {
  work: string;
  file: string;
  plan: PlannedWrite;
}

let tmp: ReturnType<typeof makeTempDir>;
let build: ReturnType<typeof buildForChildren>;
let pristine: string;
const lanes: Lane[] = [];

function reset(lane: Lane): void {
  rmSync(lane.work, { recursive: true, force: true });
  mkdirSync(lane.work);
  cpSync(pristine, lane.file);
}

beforeAll(async () => {
  tmp = makeTempDir("kill");
  build = buildForChildren("kill");
  pristine = path.join(tmp.dir, "pristine.jsonl");
  generateSession(pristine, 5_000_000);
  for (const name of ["a", "b"]) {
    const work = path.join(tmp.dir, name);
    const lane = { work, file: path.join(work, "session.jsonl"), plan: undefined as unknown as PlannedWrite };
    reset(lane);
    // Plan once per lane: a real run (in process), whose appended lines and sidecars the children re-commit.
    lane.plan = await planWrite(lane.file, path.join(tmp.dir, `plan-${name}.json`), runCli, ["--set", "spillThreshold=16000"]);
    lanes.push(lane);
  }
  const { plan } = lanes[0];
  expect(plan.entryIds.length).toBeGreaterThan(100);
  expect(plan.sidecars.length).toBeGreaterThanOrEqual(2);
  expect(plan.length).toBeGreaterThan(1_000_000);
  expect([lanes[1].plan.length, lanes[1].plan.preSha]).toEqual([plan.length, plan.preSha]);
}, 120_000);

afterAll(() => {
  tmp?.cleanup();
  build?.cleanup();
});

interface Outcome {
  fault: string;
  signal: string | null;
  state: "before" | "after" | "bad";
  problems: string[];
}

/** Check every invariant after the next command; returns the final state and what is wrong. */
function inspect({ file, plan }: Lane, next: { code: number; stderr: string }): Pick<Outcome, "state" | "problems"> {
  const problems: string[] = [];
  const bytes = readFileSync(file);
  if (bytes.length < plan.preSize || sha256(bytes.subarray(0, plan.preSize)) !== plan.preSha) problems.push("original bytes changed");
  let state: Outcome["state"] = "bad";
  if (bytes.length === plan.preSize) state = "before";
  else if (bytes.length === plan.preSize + plan.length && sha256(bytes.subarray(plan.preSize)) === plan.appendSha) state = "after";
  if (state === "bad") problems.push(`size ${bytes.length}: neither before nor before + all`);
  if (!tailIsWhole(bytes, plan.preSize)) problems.push("torn tail");
  const left = leftovers(file);
  if (left.length > 0) problems.push(`leftovers: ${left.join(", ")}`);
  for (const s of plan.sidecars) {
    const there = existsSync(s.path);
    if (state === "before" && there) problems.push(`sidecar of a rolled-back write left: ${path.basename(s.path)}`);
    if (state === "after" && (!there || readFileSync(s.path, "utf8") !== s.text)) problems.push(`sidecar missing: ${path.basename(s.path)}`);
  }
  const undo = readUndoRecords(file);
  if (state === "after" && undo.at(-1)?.postSize !== plan.preSize + plan.length) problems.push("no undo record for the completed write");
  if (state === "before" && undo.length > 0) problems.push("an undo record for a write that is not there");
  if (![0, 1].includes(next.code)) problems.push(`next command exit ${next.code}`);
  if (hasStackTrace(next.stderr)) problems.push(`stack trace: ${next.stderr.slice(0, 200)}`);
  return { state, problems };
}

/** In-process commands take turns (they capture process.stdout). */
let turn: Promise<unknown> = Promise.resolve();
function inTurn<T>(work: () => Promise<T>): Promise<T> {
  const mine = turn.then(work);
  turn = mine.catch(() => undefined);
  return mine;
}

/** One trial: reset, commit in a child killed at `fault`, then the next command. */
async function trial(lane: Lane, fault: string): Promise<Outcome> {
  reset(lane);
  const child = await runProcess(process.execPath, [CHILD, build.dist, lane.plan.planFile, lane.file], { env: { ...process.env, CONDENSE_TEST_FAULT: fault } });
  if (child.signal !== "SIGKILL" && child.code !== 0)
    return { fault, signal: child.signal, state: "bad", problems: [`child exit ${child.code}: ${child.stderr}`] };
  return inTurn(async () => {
    const next = await runCli("query", "t1", "--session", lane.file, "--json");
    return { fault, signal: child.signal, ...inspect(lane, next) };
  });
}

/** Run every fault, two lanes at once. */
async function trials(faults: string[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  await Promise.all(
    lanes.map(async (lane, l) => {
      for (let i = l; i < faults.length; i += lanes.length) outcomes.push(await trial(lane, faults[i]));
    }),
  );
  return outcomes;
}

describe("kill -9 during the commit of a run on a generated 5 MB session", () => {
  it("every step and ≥100 byte offsets end in before or before + all entries, repaired by the next command", async () => {
    const { plan } = lanes[0];
    const steps = ["lock-held", "journal-tmp", "journal", "sidecars:0", "sidecars:1", "appended", "fsynced", "committed"].map((s) => `step:${s}`);
    const edges = [0, 1, 4095, 4096, plan.firstLine - 1, plan.firstLine, plan.firstLine + 1, plan.length - 1];
    const random = seeded(15);
    const offsets = new Set(edges);
    while (offsets.size < edges.length + 100) offsets.add(Math.floor(random() * plan.length));
    const outcomes = await trials([...steps, ...[...offsets].map((n) => `append:${n}`)]);
    const bad = outcomes.filter((o) => o.problems.length > 0).map((o) => `${o.fault}: ${o.problems.join("; ")}`);
    expect(bad).toEqual([]);
    expect(outcomes.length).toBe(steps.length + offsets.size);
    expect(outcomes.filter((o) => o.signal === "SIGKILL").length).toBe(outcomes.length);
    // The two allowed states both occur: torn appends roll back, a kill after fsync keeps the write.
    const byFault = new Map(outcomes.map((o) => [o.fault, o.state]));
    expect(byFault.get("append:0")).toBe("before");
    expect(byFault.get(`append:${plan.length - 1}`)).toBe("before");
    expect(byFault.get("step:journal")).toBe("before");
    expect(byFault.get("step:fsynced")).toBe("after");
    expect(byFault.get("step:committed")).toBe("after");
    expect(outcomes.filter((o) => o.fault.startsWith("append:")).every((o) => o.state === "before")).toBe(true);
  }, 170_000);

  it("an uninterrupted child commit appends exactly the planned bytes and records them for undo", async () => {
    const [lane] = lanes;
    const o = await trial(lane, "none");
    expect([o.signal, o.problems, o.state]).toEqual([null, [], "after"]);
    const [record] = readUndoRecords(lane.file);
    expect([record.preSize, record.length, record.sha256, record.op]).toEqual([lane.plan.preSize, lane.plan.length, lane.plan.appendSha, "run"]);
    expect(record.sidecars.map((s) => [s.path, s.created])).toEqual(lane.plan.sidecars.map((s) => [s.path, true]));
  });
});
