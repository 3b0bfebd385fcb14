/**
 * Native mode over generated sessions (a seeded generator — mulberry32, so every failure replays —: prompts as strings or text + image,
 * tool turns of one to three calls with outputs of 50 to 4,000 characters, a quarter of the calls
 * under a reused id (across turns and inside one message), failed calls with long
 * arguments, signed thinking, interrupted chains, custom messages between a call and its result,
 * results no call answers). For each: `run --target pi`, then Pi 1.6 appends more turns through its
 * own SessionManager and `run --target pi` runs again. After each run, what must hold whatever the
 * shape: Pi alone sends exactly `render --as pi-only`; its context is as valid for providers as
 * before the run (checks.ts); a further run appends nothing.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli-harness.js";
import { importPiMessages, importPiSessionManager, makeTempDir } from "./helpers.js";
import { seeded } from "./fault/support.js";
import { expectProviderValid } from "./native-mode/checks.js";

const SESSIONS = 24;
const REUSED_IDS = ["bash_23", "functions.bash:0"];

const MODEL = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" };
const USAGE = {
  input: 1000,
  output: 100,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 1100,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** Messages of `chains` chains, appended through `append` (Pi's appendMessage, or a file writer). */
function generate(rnd: () => number, chains: number, tag: string, append: (m: Record<string, unknown>) => void, clock: { t: number }): void {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const text = (n: number, what: string) => Array.from({ length: Math.ceil(n / 40) }, (_, i) => `${what} ${i}: ${"z".repeat(30)}`).join("\n");
  const at = () => (clock.t += 1000);
  const assistant = (content: unknown[], stopReason: string) => append({ role: "assistant", content, ...MODEL, usage: USAGE, stopReason, timestamp: at() });
  let n = 0;
  for (let c = 0; c < chains; c++) {
    const prompt = `task ${tag}-${c}`;
    append({
      role: "user",
      content:
        rnd() < 0.4 ? prompt : [{ type: "text", text: prompt }, ...(rnd() < 0.2 ? [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }] : [])],
      timestamp: at(),
    });
    const turns = 1 + Math.floor(rnd() * 3);
    for (let t = 0; t < turns; t++) {
      const calls = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => {
        // A quarter of the calls reuse an id of the pool (across turns and inside one message), as providers do.
        const id = rnd() < 0.25 ? pick(REUSED_IDS) : `${tag}_${n++}`;
        const failed = rnd() < 0.15;
        const name = pick(["read", "bash", "write", "grep"]);
        return { id, name, failed, args: failed ? { path: `f${n}`, content: "y".repeat(600) } : { path: `f${n}` } };
      });
      const thinking = rnd() < 0.5 ? [{ type: "thinking", thinking: `plan ${n}`, thinkingSignature: `sig-${tag}-${n}` }] : [];
      assistant([...thinking, ...calls.map((k) => ({ type: "toolCall", id: k.id, name: k.name, arguments: k.args }))], "toolUse");
      for (const k of calls) {
        if (rnd() < 0.08) append({ role: "custom", customType: "note", content: "a note", display: false, timestamp: at() });
        const out = k.failed ? "EACCES: permission denied" : text(50 + Math.floor(rnd() * 4000), k.id);
        append({ role: "toolResult", toolCallId: k.id, toolName: k.name, content: [{ type: "text", text: out }], isError: k.failed, timestamp: at() });
      }
      if (rnd() < 0.05)
        append({
          role: "toolResult",
          toolCallId: `ghost_${n++}`,
          toolName: "bash",
          content: [{ type: "text", text: "for no call" }],
          isError: false,
          timestamp: at(),
        });
    }
    // Most chains close with a text-only reply; some are interrupted by the next prompt.
    if (rnd() < 0.85)
      assistant(
        [...(rnd() < 0.5 ? [{ type: "thinking", thinking: "done", thinkingSignature: `sig-f-${tag}-${c}` }] : []), { type: "text", text: `done ${c}` }],
        "stop",
      );
  }
}

/** A v3 session file of generated messages (custom roles as Pi writes them: custom_message entries). */
function writeSession(file: string, rnd: () => number, clock: { t: number }): void {
  const lines = [JSON.stringify({ type: "session", version: 3, id: path.basename(file, ".jsonl"), timestamp: "2026-01-01T00:00:00.000Z", cwd: "/gen" })];
  let parent: string | null = null;
  let id = 0;
  generate(
    rnd,
    4 + Math.floor(rnd() * 6),
    "a",
    (m) => {
      const entryId = (++id).toString(16).padStart(8, "0");
      const timestamp = new Date(m.timestamp as number).toISOString();
      const entry =
        m.role === "custom"
          ? { type: "custom_message", id: entryId, parentId: parent, timestamp, customType: m.customType, content: m.content, display: false }
          : { type: "message", id: entryId, parentId: parent, timestamp, message: m };
      lines.push(JSON.stringify(entry));
      parent = entryId;
    },
    clock,
  );
  writeFileSync(file, `${lines.join("\n")}\n`);
}

describe("native mode over generated sessions", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiMessages: any;
  beforeAll(async () => {
    tmp = makeTempDir("native-property");
    Pi = await importPiSessionManager();
    PiMessages = await importPiMessages();
  });
  afterAll(() => tmp?.cleanup());

  /** The most of each kind of edit one file got (so the shapes above were really exercised). */
  const KINDS: Record<string, RegExp> = {
    omitted: /"type":"context_edit".*"replacement":null/g,
    stub: /"replacement":\{"content":\[\{"type":"text","text":"\[Summarized in pruner summary/g,
    purged: /"_purged":/g,
    carrier: /"replacement":\{"content":\[\{"type":"text","text":"<compressed-chain id=/g,
  };
  const seen: Record<string, number> = {};
  const sent = (file: string) => PiMessages.convertToLlm(Pi.SessionManager.open(file).buildSessionContext().messages);
  const env = (day: number) => ({ CONDENSE_NOW: `2026-02-0${day}T00:00:00.000Z`, PI_CODING_AGENT_DIR: path.join(tmp.dir, "agent") });

  /** One run, and everything that must hold after it. */
  const runAndCheck = async (file: string, day: number, label: string) => {
    const before = sent(file);
    const run = await runCli(["run", file, "--target", "pi", "--quiet"], env(day));
    expect(run.code, `${label}: ${run.stderr}`).toBe(0);
    const after = sent(file);
    const rendered = await runCli(["render", file, "--as", "pi-only", "--format", "json", "--quiet"], env(day));
    expect(JSON.parse(rendered.stdout), `${label}: Pi alone = render --as pi-only`).toStrictEqual(after);
    expectProviderValid(label, before, after);
    const bytes = readFileSync(file);
    expect((await runCli(["run", file, "--target", "pi", "--quiet"], env(day))).code).toBe(0);
    expect(readFileSync(file).equals(bytes), `${label}: a second run appends nothing`).toBe(true);
    const text = bytes.toString("utf8");
    for (const [kind, pattern] of Object.entries(KINDS)) seen[kind] = Math.max(seen[kind] ?? 0, text.match(pattern)?.length ?? 0);
  };

  for (let seed = 1; seed <= SESSIONS; seed++) {
    it(`seed ${seed}`, async () => {
      const rnd = seeded(seed);
      const clock = { t: 1_767_225_600_000 };
      const file = path.join(tmp.dir, `gen-${seed}.jsonl`);
      writeSession(file, rnd, clock);
      await runAndCheck(file, 1, `seed ${seed}, run 1`);
      // Pi appends more work to the condensed session, then condense runs again.
      const sm = Pi.SessionManager.open(file);
      generate(
        rnd,
        2 + Math.floor(rnd() * 4),
        "b",
        (m) => (m.role === "custom" ? sm.appendCustomMessageEntry(m.customType, m.content, false) : sm.appendMessage(m)),
        clock,
      );
      await runAndCheck(file, 2, `seed ${seed}, run 2`);
    });
  }

  it("exercised every kind of edit", () => {
    for (const kind of Object.keys(KINDS)) expect(seen[kind], kind).toBeGreaterThan(0);
  });
});
