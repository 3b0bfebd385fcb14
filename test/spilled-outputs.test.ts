/**
 * Spilled outputs beyond the session file itself (fixtures/spilled-output-then-short-chains.jsonl:
 * one 75,418-character output, spilled; fixtures/spill-lone-surrogate.jsonl: the same with a lone
 * surrogate in it):
 * - a fork made with Pi's `/fork` (Pi 1.6's own `createBranchedSession`) holds copies of the
 *   parent's index entries, which name the parent's sidecars: `query` on the fork reads them from
 *   the parent's blobs folder (confinement of that folder: confine.test.ts);
 * - `run --output` beside the session shares its blobs folder (same session id), and a fork names
 *   the parent's sidecars: `undo` on the session keeps every sidecar such a file names, byte for
 *   byte, and still removes those nobody else names;
 * - a lone surrogate in a spilled output is written to the sidecar as U+FFFD (UTF-8 has no lone
 *   surrogates; the extension writes it the same way, and pi-ai strips lone surrogates from what
 *   it sends): `query` returns the sidecar's text (docs/extension-parity.md).
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli-harness.js";
import { FIXTURES, importPiSessionManager, makeTempDir } from "./helpers.js";

const SPILLED = "spilled-output-then-short-chains.jsonl";
const SIDECAR = "01a22fd4-2cb5-7635-be73-8d474364c43b-blobs/toolu_000001_1807000003000.txt";

/** The text of the fixture's tool result in entry `id`. */
function resultText(name: string, id: string): string {
  const line = readFileSync(path.join(FIXTURES, name), "utf8")
    .split("\n")
    .find((l) => l.includes(`"id":"${id}"`));
  return JSON.parse(line!).message.content[0].text;
}

describe("spilled outputs: forks, --output copies, undo", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  const env = () => ({ CONDENSE_NOW: "2026-12-02T00:00:00.000Z", PI_CODING_AGENT_DIR: path.join(tmp.dir, "agent") });
  const output = resultText(SPILLED, "6e88c0f3");
  beforeAll(async () => {
    tmp = makeTempDir("spilled-outputs");
    Pi = await importPiSessionManager();
  });
  afterAll(() => tmp?.cleanup());

  /** A folder with the fixture, run for stock Pi; its path and its sidecar's. */
  const condensed = async (folder: string, name = SPILLED) => {
    const dir = path.join(tmp.dir, folder);
    mkdirSync(dir);
    const file = path.join(dir, "s.jsonl");
    copyFileSync(path.join(FIXTURES, name), file);
    const run = await runCli(["run", file, "--quiet"], env());
    expect(run.code, run.stderr).toBe(0);
    return { dir, file, sidecar: path.join(dir, SIDECAR) };
  };
  const query = async (file: string, ...args: string[]) => {
    const r = await runCli(["query", "t1", "--full", "--json", "--session", file, ...args], env());
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout).results[0];
  };
  const fork = (file: string): string => {
    const sm = Pi.SessionManager.open(file);
    return sm.createBranchedSession(sm.getLeafId());
  };

  it("the fixture's output is spilled: query on the session reads it whole from the sidecar", async () => {
    const { file, sidecar } = await condensed("plain");
    expect(output.length).toBe(75418);
    expect(readFileSync(sidecar, "utf8")).toBe(output);
    const res = await query(file);
    expect([res.outputSource, res.sidecarPath, res.output === output]).toEqual(["sidecar", sidecar, true]);
  });

  it("a fork made with Pi's /fork: query reads the parent's sidecar, whole, as text and as context_tree_query's text", async () => {
    const { file, sidecar } = await condensed("fork");
    const forked = fork(file);
    expect(JSON.parse(readFileSync(forked, "utf8").split("\n")[0]).parentSession).toBe(file);
    const res = await query(forked);
    expect([res.outputSource, res.sidecarPath, res.output === output]).toEqual(["sidecar", sidecar, true]);
    const tool = async (f: string) => (await runCli(["query", "t1", "--full", "--format", "tool", "--session", f], env())).stdout;
    const text = await tool(forked);
    expect(text).toBe(await tool(file));
    expect(text.endsWith(`\n\n${output}\n`)).toBe(true);
  });

  it("run --output beside the session, then undo: the sidecar out.jsonl names stays, byte for byte", async () => {
    const { dir, file, sidecar } = await condensed("output");
    const bytes = readFileSync(sidecar);
    const out = path.join(dir, "out.jsonl");
    expect((await runCli(["run", file, "--output", out, "--quiet"], env())).code).toBe(0);
    const dry = await runCli(["undo", file, "--dry-run"], { ...env(), NO_COLOR: "1" });
    expect(dry.stdout.endsWith(`; kept 1 sidecar file ${out} names\n`), dry.stdout).toBe(true);
    const undo = await runCli(["undo", file, "--json"], env());
    expect(undo.code, undo.stderr).toBe(0);
    const result = JSON.parse(undo.stdout);
    expect([result.sidecars, result.keptSidecars]).toEqual([[], [{ path: sidecar, namedBy: out }]]);
    expect(readFileSync(sidecar).equals(bytes)).toBe(true);
    const res = await query(out);
    expect([res.outputSource, res.output === output]).toEqual(["sidecar", true]);
  });

  it("a fork of the session keeps the parent's sidecar through undo; with no other file naming it, undo removes it", async () => {
    const { file, sidecar } = await condensed("undo-fork");
    const forked = fork(file);
    const result = JSON.parse((await runCli(["undo", file, "--json"], env())).stdout);
    expect(result.keptSidecars).toEqual([{ path: sidecar, namedBy: forked }]);
    expect(readFileSync(sidecar, "utf8")).toBe(output);
    expect((await query(forked)).outputSource).toBe("sidecar");

    const alone = await condensed("undo-alone");
    const removed = JSON.parse((await runCli(["undo", alone.file, "--json"], env())).stdout);
    expect([removed.sidecars, removed.keptSidecars]).toEqual([[alone.sidecar], []]);
    expect(existsSync(alone.sidecar)).toBe(false);
  });

  it("a lone surrogate in a spilled output is U+FFFD in the sidecar and in what query returns", async () => {
    const original = resultText("spill-lone-surrogate.jsonl", "ed5b9bcc");
    expect(original.slice(0, 11)).toBe("head \udc00 tail");
    const { file, dir } = await condensed("surrogate", "spill-lone-surrogate.jsonl");
    const sidecar = path.join(dir, "01a22fd4-1883-73a3-8324-b5e0ee36befc-blobs/toolu_000001_1806000003000.txt");
    const bytes = readFileSync(sidecar);
    expect(bytes.subarray(0, 13)).toEqual(Buffer.from([...Buffer.from("head "), 0xef, 0xbf, 0xbd, ...Buffer.from(" tail")]));
    expect(bytes.toString("utf8")).toBe(original.replace("\udc00", "\uFFFD"));
    const res = await query(file);
    expect([res.outputSource, res.output === original.replace("\udc00", "\uFFFD")]).toEqual(["sidecar", true]);
  });
});
