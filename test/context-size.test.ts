/**
 * The one size measure (src/context/size.ts, docs/design.md "Context size"): per message exactly
 * what Pi 1.6's `estimateTokens` counts, on every message condense renders for every shared
 * session — as read and after a run — and, summed, Pi's own estimate of its own projection.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { contextSize, ESTIMATED_IMAGE_CHARS, messageChars, messageTokens, piEstimateTokens } from "../src/context/size.js";
import { renderAfterRun } from "../src/pipeline/render.js";
import { sessionView } from "../src/pipeline/view.js";
import { openSession } from "../src/session/open.js";
import { loadSession } from "../src/session/session.js";
import type { AgentMessage } from "../src/session/types.js";
import { copyInto, HEADERLESS_SHARED, importPiCompaction, importPiSessionManager, makeTempDir, SHARED_SESSIONS, sharedSessionFiles } from "./helpers.js";

const present = existsSync(SHARED_SESSIONS);
const files = sharedSessionFiles();
const HEADERLESS = HEADERLESS_SHARED;
const excluded = (m: AgentMessage) => m.role === "bashExecution" && m.excludeFromContext === true;

describe("messageChars / messageTokens on hand-made messages", () => {
  it("counts what reaches the provider, as Pi does", () => {
    const at = 1;
    const user: AgentMessage = {
      role: "user",
      content: [
        { type: "text", text: "abcde" },
        { type: "image", data: "x".repeat(99), mimeType: "image/png" },
      ],
      timestamp: at,
    };
    expect(messageChars(user)).toBe(5 + ESTIMATED_IMAGE_CHARS);
    expect(messageTokens(user)).toBe(Math.ceil((5 + 4800) / 4));
    const assistant = {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "hmm", thinkingSignature: "not counted" },
        { type: "text", text: "ok" },
        { type: "toolCall", id: "c1", name: "bash", arguments: { command: "ls" } },
      ],
      usage: { input: 999999 },
      timestamp: at,
    } as unknown as AgentMessage;
    // 3 + 2 + "bash" + {"command":"ls"} (16) — no signature, usage, ids or timestamps.
    expect(messageChars(assistant)).toBe(3 + 2 + 4 + 16);
    const result = {
      role: "toolResult",
      toolCallId: "c1",
      toolName: "bash",
      content: "a string",
      details: { huge: "x".repeat(1000) },
      isError: false,
      timestamp: at,
    } as unknown as AgentMessage;
    expect(messageChars(result)).toBe(8);
    const bash = { role: "bashExecution", command: "ls", output: "a\nb", exitCode: 0, cancelled: false, truncated: false, timestamp: at } as AgentMessage;
    expect(messageChars(bash)).toBe(2 + 3);
    const excludedBash = { ...bash, excludeFromContext: true } as AgentMessage;
    expect(contextSize([bash, excludedBash])).toEqual({ messages: 1, chars: 5, tokens: 2 });
    // Pi's own estimate (compaction's) counts it all the same.
    expect(piEstimateTokens(excludedBash)).toBe(2);
    const summary = { role: "compactionSummary", summary: "12345", tokensBefore: 9, timestamp: at } as unknown as AgentMessage;
    expect(messageTokens(summary)).toBe(2);
    // Tokens are summed per message (ceil each), not chars / 4 of the whole.
    expect(contextSize([summary, summary])).toEqual({ messages: 2, chars: 10, tokens: 4 });
  });
});

describe.skipIf(!present)("the measure equals Pi's estimateTokens on every shared session", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let Compaction: any;
  beforeAll(async () => {
    tmp = makeTempDir("context-size");
    Pi = await importPiSessionManager();
    Compaction = await importPiCompaction();
  });
  afterAll(() => tmp?.cleanup());

  it.each(files)("%s", async (name) => {
    // The header-less one fails every read-only command (Pi cannot open it); measured as read.
    const file = path.join(SHARED_SESSIONS, name);
    const session = name === HEADERLESS ? await loadSession(file) : await openSession(file, "read");
    const view = sessionView(session, defaultConfig());
    const after = await renderAfterRun(view.fork());
    // Every message condense measures — the projection, what Pi sends now, and after a run (stubs,
    // summaries, compressed-chain blocks) — counts what Pi's estimateTokens counts.
    const lists = [view.rendered.beforeAgent, view.rendered.afterAgent, after.afterAgent];
    let checked = 0;
    for (const list of lists) {
      for (const m of list) {
        expect(piEstimateTokens(m), `${m.role} message`).toBe(Compaction.estimateTokens(m));
        expect(messageTokens(m), `${m.role} message`).toBe(excluded(m) ? 0 : Compaction.estimateTokens(m));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
    if (name === HEADERLESS) return; // Pi refuses to open it
    // Summed over Pi's own projection of a copy (Pi rewrites v1/v2 files on open).
    const piMessages: AgentMessage[] = Pi.SessionManager.open(copyInto(tmp.dir, path.join(SHARED_SESSIONS, name))).buildSessionContext().messages;
    const piTokens = piMessages.filter((m) => !excluded(m)).reduce((t, m) => t + Compaction.estimateTokens(m), 0);
    expect(contextSize(view.rendered.beforeAgent).tokens).toBe(piTokens);
  });
});
