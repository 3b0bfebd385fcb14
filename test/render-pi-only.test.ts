/**
 * `render --as pi-only` is what stock Pi sends without the extension: Pi 1.6's own
 * `buildSessionContext` + `convertToLlm` (SessionManager imported by file path, on this Node), on
 * every shared session and fixture, before and after `condense run`. `render` shows it by default
 * when Pi's settings do not install and switch on the extension; `run --target extension` and
 * `render --as extension` warn on stderr then (the extension's entries alone make that context grow).
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIXTURES, importPiMessages, importPiSessionManager, makeTempDir, SHARED_SESSIONS } from "./helpers.js";
import { runCli } from "./cli-harness.js";

const NOW = { CONDENSE_NOW: "2026-02-01T00:00:00.000Z" };
const shared = existsSync(SHARED_SESSIONS)
  ? readdirSync(SHARED_SESSIONS)
      .filter((f) => f.endsWith(".jsonl"))
      .map((f) => path.join(SHARED_SESSIONS, f))
  : [];
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith(".jsonl"))
  .map((f) => path.join(FIXTURES, f));
const sources = [...shared, ...fixtures].sort();

describe("render --as pi-only equals what Pi 1.6 sends without the extension", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiMessages: any;
  beforeAll(async () => {
    tmp = makeTempDir("pi-only");
    Pi = await importPiSessionManager();
    PiMessages = await importPiMessages();
  });
  afterAll(() => tmp?.cleanup());

  /** Pi's context for a file (on a copy: Pi rewrites v1/v2 files it opens), or why it has none. */
  const piContext = (file: string, dir: string): unknown[] | string => {
    mkdirSync(dir, { recursive: true });
    const copy = path.join(dir, path.basename(file));
    copyFileSync(file, copy);
    try {
      return PiMessages.convertToLlm(Pi.SessionManager.open(copy).buildSessionContext().messages);
    } catch (error) {
      return (error as Error).message;
    }
  };
  const renderPiOnly = async (file: string) => runCli(["render", file, "--as", "pi-only", "--format", "json", "--quiet"]);

  let grew = 0;
  for (const source of sources) {
    const name = path.basename(source);
    it(`${path.basename(path.dirname(source))}/${name}`, async () => {
      const dir = path.join(tmp.dir, path.basename(path.dirname(source)), name);
      mkdirSync(dir, { recursive: true });
      // Pi walks a parent cycle until its array cannot grow (a fatal crash on Node 20): not handed to Pi.
      const before = name === "bad-parent-cycle.jsonl" ? "a parent cycle" : piContext(source, path.join(dir, "pi-before"));
      const ours = await renderPiOnly(source);
      const after = path.join(dir, name);
      copyFileSync(source, after);
      const run = await runCli(["run", after, "--migrate", "--quiet"], NOW);
      if (typeof before === "string") {
        // Pi cannot open it or build its context: condense refuses to write to it.
        expect(run.code, `${name}: Pi says ${before}`).toBe(2);
        return;
      }
      if (ours.code !== 0) {
        // Only an empty file: Pi opens it as a new session; condense refuses it.
        expect(ours.stderr).toContain("the file is empty");
        expect(before).toEqual([]);
        return;
      }
      expect(JSON.parse(ours.stdout)).toStrictEqual(before);
      if (run.code !== 0) {
        expect(run.stderr).toMatch(/the final line \(line \d+, byte \d+\) is cut off mid-object/);
        return;
      }
      const piAfter = piContext(after, path.join(dir, "pi-after"));
      const oursAfter = await renderPiOnly(after);
      expect(oursAfter.code).toBe(0);
      const afterMessages = JSON.parse(oursAfter.stdout) as unknown[];
      expect(afterMessages).toStrictEqual(piAfter);
      // Without the extension nothing is stubbed: every summary run appended only adds to the context.
      const summaries = afterMessages.length - (before as unknown[]).length;
      expect(summaries).toBeGreaterThanOrEqual(0);
      if (summaries > 0) {
        expect(JSON.stringify(afterMessages).length).toBeGreaterThan(JSON.stringify(before).length);
        grew++;
      }
    });
  }

  it("saw the context grow on sessions run summarized", () => {
    expect(grew).toBeGreaterThanOrEqual(10);
  });
});

describe("run and render say when Pi's settings leave the extension off", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let file: string;
  let agentDir: string;
  beforeAll(() => {
    tmp = makeTempDir("extension-off");
    agentDir = path.join(tmp.dir, "agent");
    mkdirSync(agentDir);
    file = path.join(tmp.dir, "example-session.jsonl");
    copyFileSync(path.join(FIXTURES, "example-session.jsonl"), file);
  });
  afterAll(() => tmp?.cleanup());

  const settings = () => path.join(agentDir, "settings.json");
  const warning = (advice: string) =>
    `warning: the pi-condense extension is not switched on (${settings()} does not exist): without it Pi sends the ` +
    "pruner summaries and the raw outputs both, so the entries condense run writes make the context larger, not smaller. " +
    `Switch it on with /pruner on in Pi, or set "contextPrune": { "enabled": true } in ${settings()}. ` +
    `It does not look installed either: pi install npm:pi-condense. ${advice}\n`;

  it("run --target extension warns on stderr, also with --json (whose document carries it in warnings); --quiet silences it", async () => {
    const env = { ...NOW, PI_CODING_AGENT_DIR: agentDir };
    const dry = await runCli(["run", file, "--target", "extension", "--dry-run", "--json"], env);
    expect(dry.code).toBe(0);
    const text = warning(
      "Or run with --target pi (what auto picks while the extension is off): run then also writes Pi's own context edits, " +
        "so Pi sends the pruned context without the extension. condense render --as pi-only shows what Pi sends without it.",
    );
    expect(dry.stderr).toBe(text);
    const doc = JSON.parse(dry.stdout);
    expect(Object.keys(doc)).toEqual(["sessions", "failures", "warnings", "wallMs"]);
    expect(doc.warnings).toEqual([text.replace(/^warning: /, "").trimEnd()]);
    const quiet = await runCli(["run", file, "--target", "extension", "--dry-run", "--quiet"], env);
    expect(quiet.stderr).toBe("");
  });

  it("run with the default target writes for stock Pi then, and says so instead of warning", async () => {
    const r = await runCli(["run", file, "--dry-run", "--json"], { ...NOW, PI_CODING_AGENT_DIR: agentDir });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const [session] = JSON.parse(r.stdout).sessions;
    expect(session.target).toEqual({ used: "pi", reason: `${settings()} does not exist` });
    expect(session.contextEdits.written).toBeGreaterThan(0);
  });

  it("render shows what this Pi sends — stock Pi's context, no warning; --as extension says it is not what Pi sends", async () => {
    const env = { PI_CODING_AGENT_DIR: agentDir };
    const r = await runCli(["render", file, "--json"], env);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const doc = JSON.parse(r.stdout);
    expect(doc.as).toBe("pi-only");
    expect(doc.stats.map((s: { phase: string }) => s.phase)).toEqual(["projection"]);
    expect(doc.diagnostics).toEqual([]);
    const piOnly = await runCli(["render", file, "--as", "pi-only", "--json"], env);
    expect(piOnly.stderr).toBe("");
    expect(JSON.parse(piOnly.stdout).messages).toEqual(doc.messages);
    const extension = await runCli(["render", file, "--as", "extension", "--format", "json"], env);
    expect(extension.code).toBe(0);
    expect(extension.stderr).toBe(
      `warning: this render shows the context Pi sends with the pi-condense extension, but the extension is not switched on (${settings()} does not exist): ` +
        `Pi sends what condense render shows without --as (stock Pi's context, --as pi-only). Switch it on with /pruner on in Pi, or set "contextPrune": ` +
        `{ "enabled": true } in ${settings()}. It does not look installed either: pi install npm:pi-condense.\n`,
    );
  });

  it("after a default run, render tells a stock-Pi user the context it sends: what run said, smaller, no warning", async () => {
    const copy = path.join(tmp.dir, "ran.jsonl");
    copyFileSync(file, copy);
    const env = { ...NOW, PI_CODING_AGENT_DIR: agentDir };
    const run = await runCli(["run", copy, "--json"], env);
    expect(run.code).toBe(0);
    const [session] = JSON.parse(run.stdout).sessions;
    // (The stubs name the session by its path, so "after" depends on the temp folder's name.)
    const after = session.context.piOnly.after.tokens.toLocaleString("en-US");
    expect(session.context.piOnly.before.tokens).toBe(1427);
    expect(session.context.piOnly.after.tokens).toBeLessThan(1427);
    const r = await runCli(["render", copy, "--stats"], env);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout.split("\n")[2]).toBe(`context Pi sends (stock Pi): ${after} ~tokens now → ${after} after \`condense run\` (0%)`);
  });

  it("says nothing once settings.json switches it on", async () => {
    const on = path.join(tmp.dir, "agent-on");
    mkdirSync(on);
    writeFileSync(path.join(on, "settings.json"), JSON.stringify({ packages: ["npm:pi-condense"], contextPrune: { enabled: true } }));
    const r = await runCli(["run", file, "--dry-run"], { ...NOW, PI_CODING_AGENT_DIR: on });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
  });
});
