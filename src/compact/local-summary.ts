/**
 * The zero-model compaction summary: Pi's structured checkpoint format (Goal, Constraints &
 * Preferences, Progress, Key Decisions, Next Steps, Critical Context — the format of Pi 1.6's
 * `SUMMARIZATION_PROMPT`) filled from the session itself, with no model, network or key.
 *
 * What goes in: the user's requests (the first is the goal; answered ones are done, the last
 * one, unanswered, is in progress; each line without its own list marker, and without diagram
 * lines — box drawing, pointer arrows — or lines with no letter), the constraints they stated, the files modified (with edit and
 * write counts) and the assistant's reasons for those changes, the commands run with their exit
 * status, the failures after the last command that succeeded (blocked), the errors seen, and the
 * last assistant reply before the cut. A previous compaction's summary is carried forward,
 * shortened. Split turns get Pi's two-part shape (history, `---`, "Turn Context (split turn)").
 * Every list and text is capped, so the summary stays bounded (under 18k characters, about 4.5k
 * tokens, before the file lists Pi appends) whatever the session's size.
 */
import { textOf } from "../context/projection.js";
import { withoutCompressedChains } from "../context/vocabulary.js";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../session/types.js";
import { keyArgument } from "../summarize/deterministic.js";
import { mergeSplitTurn } from "./request.js";

/** Caps (characters or items) that keep the summary bounded. */
const CAP = {
  goal: 600,
  request: 280,
  constraint: 220,
  constraints: 8,
  modifiedListed: 25,
  answered: 6,
  commands: 12,
  command: 160,
  errors: 8,
  errorLine: 220,
  decisions: 6,
  decision: 300,
  lastReply: 1500,
  previousSummary: 2500,
  prefixRequest: 800,
};

/** Words that mark a user's sentence as a requirement or preference. */
const CONSTRAINT =
  /\b(must|mustn't|must not|don't|do not|never|always|prefer|preferably|make sure|ensure|without|avoid|only use|should(?:n't| not)?|required?|keep (?:it|the|them)|no more than|at most|at least)\b/i;
/** Words that mark an assistant's text as a decision or a diagnosis. */
const DECISION = /\b(because|so that|instead|decided?|chose|choose|root cause|the (?:bug|problem|issue|cause) (?:is|was)|the fix|approach)\b/i;
/** Pi's bash tool ends a failed command's output with this line. */
const EXIT = /Command exited with code (-?\d+)\s*$/;
const TIMEOUT = /Command timed out after/i;

/** One line, whitespace collapsed, at most `max` characters (an ellipsis marks a cut). */
function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A line's own list, heading or quote marker (`- `, `* `, `1. `, `[ ] `, `## `, `> `), which a summary line replaces with its own. */
const LINE_MARKER = /^(?:[-*+•]\s+|\d+[.)]\s+|\[[ xX]\]\s+|#{1,6}\s+|>\s*)+/;
/** Box drawing, block and geometric-shape characters: a line holding one is a diagram, not prose. */
const BOX = /[\u2500-\u259f\u25a0-\u25ff]/;
const ARROWS = /[\u2190-\u21ff]/g;

/** A diagram line: box drawing anywhere, or arrows — one that starts the line (a pointer), or two or more; "a → b" in prose stays. */
function isDiagram(line: string): boolean {
  return BOX.test(line) || /^[\u2190-\u21ff]/.test(line) || (line.match(ARROWS)?.length ?? 0) >= 2;
}

/**
 * Text for one item of the summary: the lines of `text` without their own list markers, diagram
 * lines and lines without a letter left out, joined by newlines ("" when nothing is left).
 */
function prose(text: string): string {
  return text
    .split("\n")
    .map((l) => l.trim().replace(LINE_MARKER, "").trim())
    .filter((l) => l !== "" && !isDiagram(l) && /\p{L}/u.test(l))
    .join("\n");
}

/** Lines kept (blank ones dropped), at most `max` characters, each prefixed for a bullet's body. */
function clipBlock(text: string, max: number, prefix: string): string {
  const trimmed = text.trim();
  const cut = trimmed.length > max ? `${trimmed.slice(0, max - 1)}…` : trimmed;
  return cut
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => `${prefix}${l}`)
    .join("\n");
}

/** The line of a command's output most worth showing: the first error, else the first failure-like line, else the last one. */
function telltaleLine(text: string): string {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !EXIT.test(l) && l !== "(no output)");
  return (
    lines.find((l) => /\b\w*(?:Error|Exception)\b|\berror\b|\bfatal\b|\bpanic/i.test(l)) ??
    lines.find((l) => /fail|cannot|can't|not found|denied|refused|traceback|timed? ?out/i.test(l)) ??
    lines[lines.length - 1] ??
    ""
  );
}

interface Command {
  /** Position among the commands and errors, in session order. */
  seq: number;
  command: string;
  /** Exit code, or null when unknown (failed without a code, timed out, cancelled). */
  exitCode: number | null;
  status: "ok" | "failed" | "timeout";
  detail: string;
}

interface Request {
  text: string;
  /** The last assistant text while this request was current. */
  reply: string;
  /** True when the request's last assistant message is a final answer (text, no tool calls, not failed). */
  answered: boolean;
}

interface Facts {
  messages: number;
  requests: Request[];
  constraints: string[];
  commands: Command[];
  errors: { seq: number; text: string }[];
  /** Assistant texts that explain a change or state a decision, with the files they changed. */
  decisions: { files: string[]; text: string }[];
  toolCalls: number;
  failedCalls: number;
  lastReply: string;
  modified: Map<string, { edits: number; writes: number }>;
  read: string[];
  first: number | null;
  last: number | null;
  branchSummaries: string[];
}

/** What {@link collect} carries from one message to the next. */
interface Walk {
  /** Tool calls seen so far, by id (for their results). */
  calls: Map<string, { name: string; args: unknown }>;
  seenConstraints: Set<string>;
  /** Next position among the commands and errors. */
  seq: number;
}

function noteTime(f: Facts, m: AgentMessage): void {
  if (typeof m.timestamp === "number" && Number.isFinite(m.timestamp) && m.timestamp > 0) {
    f.first ??= m.timestamp;
    f.last = m.timestamp;
  }
}

/** A user request (as {@link prose}: a message of diagrams alone has no text), and the sentences of it that state a requirement or preference. */
function addUser(f: Facts, content: unknown, walk: Walk): void {
  // A compressed chain `run` put before the user's words is condense's, not a request.
  const raw = textOf(withoutCompressedChains(content)).trim();
  if (raw === "") return;
  const text = prose(raw);
  f.requests.push({ text, reply: "", answered: false });
  for (const sentence of text.split(/(?<=[.!?])\s+|\n+/)) {
    if (f.constraints.length >= CAP.constraints || !CONSTRAINT.test(sentence)) continue;
    const c = clip(sentence, CAP.constraint);
    if (c.length < 8 || walk.seenConstraints.has(c)) continue;
    walk.seenConstraints.add(c);
    f.constraints.push(c);
  }
}

/** An assistant message: its text (the current request's reply), its failure, its tool calls and the files they touch. */
function addAssistant(f: Facts, a: AssistantMessage, walk: Walk): void {
  const content = Array.isArray(a.content) ? a.content : [];
  const text = content
    .filter((b) => b?.type === "text")
    .map((b) => (b as { text: string }).text)
    .join("\n")
    .trim();
  const toolCalls = content.filter((b) => b?.type === "toolCall");
  const current = f.requests[f.requests.length - 1];
  if (text !== "") {
    f.lastReply = text;
    if (current) current.reply = prose(text);
  }
  if (current) current.answered = text !== "" && toolCalls.length === 0 && a.stopReason !== "error" && a.stopReason !== "aborted";
  if (a.stopReason === "error" && a.errorMessage) f.errors.push({ seq: walk.seq++, text: `model request failed: ${clip(a.errorMessage, CAP.errorLine)}` });
  const changed: string[] = [];
  for (const block of toolCalls) {
    f.toolCalls++;
    walk.calls.set(block.id, { name: block.name, args: block.arguments });
    const path = (block.arguments as { path?: unknown } | undefined)?.path;
    if (typeof path !== "string") continue;
    if (block.name === "edit" || block.name === "write") {
      const counts = f.modified.get(path) ?? { edits: 0, writes: 0 };
      if (block.name === "edit") counts.edits++;
      else counts.writes++;
      f.modified.set(path, counts);
      if (!changed.includes(path)) changed.push(path);
    } else if (block.name === "read" && !f.read.includes(path)) f.read.push(path);
  }
  if (text !== "" && (changed.length > 0 || (toolCalls.length > 0 && DECISION.test(text)))) f.decisions.push({ files: changed, text });
}

/** A tool result: a `bash` command with its exit status, or a failed call. */
function addToolResult(f: Facts, r: ToolResultMessage, walk: Walk): void {
  const call = walk.calls.get(r.toolCallId);
  const name = call?.name ?? r.toolName ?? "tool";
  const text = textOf(r.content);
  const command = name === "bash" ? (call?.args as { command?: unknown } | undefined)?.command : undefined;
  if (typeof command === "string") {
    const exit = EXIT.exec(text.trimEnd());
    const code = exit ? Number(exit[1]) : r.isError ? null : 0;
    f.commands.push({
      seq: walk.seq++,
      command,
      exitCode: code,
      status: TIMEOUT.test(text) ? "timeout" : r.isError || (code !== null && code !== 0) ? "failed" : "ok",
      detail: telltaleLine(text),
    });
  }
  if (!r.isError) return;
  f.failedCalls++;
  if (typeof command === "string") return;
  const what = keyArgument(call?.args);
  f.errors.push({ seq: walk.seq++, text: `${name}${what ? ` ${clip(what, 120)}` : ""} failed: ${clip(telltaleLine(text), CAP.errorLine)}` });
}

/** Read the facts the summary is made of from a message list. */
function collect(messages: AgentMessage[]): Facts {
  const f: Facts = {
    messages: messages.length,
    requests: [],
    constraints: [],
    commands: [],
    errors: [],
    decisions: [],
    toolCalls: 0,
    failedCalls: 0,
    lastReply: "",
    modified: new Map(),
    read: [],
    first: null,
    last: null,
    branchSummaries: [],
  };
  const walk: Walk = { calls: new Map(), seenConstraints: new Set(), seq: 0 };
  for (const m of messages) {
    noteTime(f, m);
    if (m.role === "user") addUser(f, m.content, walk);
    else if (m.role === "bashExecution") {
      const code = m.exitCode ?? null;
      f.commands.push({
        seq: walk.seq++,
        command: m.command,
        exitCode: code,
        status: m.cancelled || (code !== null && code !== 0) ? "failed" : "ok",
        detail: m.cancelled ? "cancelled" : telltaleLine(m.output ?? ""),
      });
    } else if (m.role === "branchSummary") f.branchSummaries.push(m.summary);
    else if (m.role === "assistant") addAssistant(f, m, walk);
    else if (m.role === "toolResult") addToolResult(f, m, walk);
  }
  return f;
}

function commandLine(c: Command): string {
  const status = c.status === "timeout" ? "timed out" : c.exitCode !== null ? `exit ${c.exitCode}` : c.status === "ok" ? "ok" : "failed";
  return `\`${clip(c.command, CAP.command)}\` → ${status}`;
}

function failureLine(c: Command): string {
  return `${commandLine(c)}${c.detail ? `: ${clip(c.detail, CAP.errorLine)}` : ""}`;
}

/**
 * What the work is stuck on: failed commands not run again successfully, and errors, after the
 * last command that succeeded (earlier ones were worked around), newest last.
 */
function blockers(f: Facts): { failures: Command[]; errors: string[]; earlierErrors: string[] } {
  const lastOk = f.commands.reduce((max, c) => (c.status === "ok" ? Math.max(max, c.seq) : max), -1);
  const failures = f.commands.filter(
    (c, i) => c.status !== "ok" && c.seq > lastOk && !f.commands.slice(i + 1).some((later) => later.command === c.command && later.status === "ok"),
  );
  return {
    failures,
    errors: f.errors.filter((e) => e.seq > lastOk).map((e) => e.text),
    earlierErrors: f.errors.filter((e) => e.seq <= lastOk).map((e) => e.text),
  };
}

function lastN<T>(items: T[], n: number): T[] {
  return items.length > n ? items.slice(items.length - n) : items;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The `## Goal` lines of a previous summary, carried forward. */
function previousGoal(previous: string): string[] {
  const match = /## Goal\n([\s\S]*?)(?:\n## |\n---|$)/.exec(previous);
  if (!match) return [];
  return match[1]
    .split("\n")
    .map((l) => l.trim().replace(/^- /, ""))
    .filter((l) => l !== "")
    .slice(0, 4)
    .map((l) => `- Earlier: ${clip(l, CAP.request)}`);
}

/** The previous summary without its file tags (they are recomputed), shortened, as quoted lines. */
function previousBody(previous: string): string {
  const body = previous.replace(/\n*<read-files>[\s\S]*?<\/read-files>/g, "").replace(/\n*<modified-files>[\s\S]*?<\/modified-files>/g, "");
  return clipBlock(body, CAP.previousSummary, "  > ");
}

export interface LocalSummaryContext {
  /** The session's working directory (header `cwd`). */
  cwd?: string;
  /** `provider/id` of the session's model. */
  model?: string;
  /** `--instructions`: shown first, as the focus of the summary. */
  customInstructions?: string;
}

/** The `## Critical Context` lines: what was summarized, where, the commands, earlier errors, other requests, the last reply, the previous summary. */
function criticalContext(f: Facts, blocked: ReturnType<typeof blockers>, previousSummary: string | undefined, context: LocalSummaryContext): string[] {
  const span = f.first !== null && f.last !== null ? `, ${new Date(f.first).toISOString()} to ${new Date(f.last).toISOString()}` : "";
  const critical = [
    `- Summarized without a model by condense from the session itself: ${plural(f.messages, "message")}, ${plural(f.requests.length, "user request")}, ${plural(f.toolCalls, "tool call")} (${f.failedCalls} failed)${span}`,
  ];
  const where = [context.cwd ? `Working directory: \`${context.cwd}\`` : "", context.model ? `model: ${context.model}` : ""].filter(Boolean);
  if (where.length > 0) critical.push(`- ${where.join("; ")}`);
  if (f.commands.length > 0) {
    critical.push(`- Commands run (last ${Math.min(CAP.commands, f.commands.length)} of ${f.commands.length}):`);
    for (const c of lastN(f.commands, CAP.commands)) critical.push(`  - ${commandLine(c)}`);
  }
  if (blocked.earlierErrors.length > 0) {
    critical.push(`- Errors seen earlier, worked around since (last ${Math.min(4, blocked.earlierErrors.length)} of ${blocked.earlierErrors.length}):`);
    for (const e of lastN(blocked.earlierErrors, 4)) critical.push(`  - ${e}`);
  }
  const others = f.requests.slice(1, -1).filter((r) => r.text !== "");
  if (others.length > 0) {
    critical.push(`- Other user requests (${others.length}, the last ${Math.min(6, others.length)}):`);
    for (const r of lastN(others, 6)) critical.push(`  - ${clip(r.text, 160)}`);
  }
  for (const b of f.branchSummaries.slice(-2)) critical.push(`- Summary of an abandoned branch: ${clip(b, 400)}`);
  if (f.lastReply) critical.push("- Last assistant reply before the cut:", clipBlock(f.lastReply, CAP.lastReply, "  > "));
  if (previousSummary) critical.push("- Earlier summary (previous compaction, shortened):", previousBody(previousSummary));
  return critical;
}

/** The history part: Pi's structured format over `messages`, carrying `previousSummary` forward. */
function historySummary(messages: AgentMessage[], previousSummary: string | undefined, context: LocalSummaryContext, splitTurnFollows: boolean): string {
  const f = collect(messages);
  const blocked = blockers(f);
  // The request in progress is the last one, unanswered; earlier unanswered ones were left for a later request.
  const last = f.requests[f.requests.length - 1];
  const current = last && !last.answered && last.text !== "" ? last : undefined;
  const worded = f.requests.filter((r) => r.text !== "");
  const out: string[] = [];
  const section = (title: string, lines: string[], empty = "- (none)") => out.push(title, lines.length > 0 ? lines.join("\n") : empty, "");

  const goal = previousSummary ? previousGoal(previousSummary) : [];
  if (worded.length > 0) goal.push(`- ${clip(worded[0].text, CAP.goal)}`);
  if (worded.length > 1) goal.push(`- Latest request: ${clip(worded[worded.length - 1].text, CAP.request)}`);
  section("## Goal", goal, "- (no user request in the summarized messages)");

  const constraints = f.constraints.map((c) => `- ${c}`);
  if (context.customInstructions) constraints.unshift(`- **Focus requested for this summary**: ${clip(context.customInstructions, 600)}`);
  section("## Constraints & Preferences", constraints);

  out.push("## Progress");
  const done: string[] = [];
  for (const r of lastN(
    worded.filter((x) => x.answered),
    CAP.answered,
  ))
    done.push(`- [x] ${clip(r.text, 160)}${r.reply ? ` — ${clip(r.reply, 200)}` : ""}`);
  const modified = [...f.modified.entries()];
  for (const [path, n] of modified.slice(0, CAP.modifiedListed)) {
    const what = [n.edits ? plural(n.edits, "edit") : "", n.writes ? plural(n.writes, "write") : ""].filter(Boolean).join(", ");
    done.push(`- [x] Modified \`${path}\` (${what})`);
  }
  if (modified.length > CAP.modifiedListed) done.push(`- [x] … and ${modified.length - CAP.modifiedListed} more files (see <modified-files>)`);
  const succeeded = [...new Map(f.commands.filter((c) => c.status === "ok").map((c) => [c.command, c])).values()];
  for (const c of lastN(succeeded, 6)) done.push(`- [x] Ran ${commandLine(c)}`);
  section("### Done", done, "- [x] (nothing recorded as done)");
  const inProgress = current ? [`- [ ] ${clip(current.text, CAP.request)}`] : [];
  section("### In Progress", inProgress, splitTurnFollows ? "- [ ] (the request in the turn context below)" : "- [ ] (none: the last request was answered)");
  section(
    "### Blocked",
    [...lastN(blocked.failures, CAP.errors).map((c) => `- ${failureLine(c)}`), ...lastN(blocked.errors, CAP.errors).map((e) => `- ${e}`)].slice(-CAP.errors),
  );

  const decisions = lastN(f.decisions, CAP.decisions).map((d) => {
    const label =
      d.files.length > 0
        ? `Changed ${d.files
            .slice(0, 3)
            .map((p) => `\`${p}\``)
            .join(", ")}${d.files.length > 3 ? " …" : ""}`
        : "Decision";
    return `- **${label}**: ${clip(d.text, CAP.decision)}`;
  });
  section("## Key Decisions", decisions, "- (none stated with a change)");

  const next: string[] = [];
  if (splitTurnFollows) next.push("Continue the request described in the turn context below");
  else if (current) next.push(`Continue the request: ${clip(current.text, 200)}`);
  const lastFailure = blocked.failures[blocked.failures.length - 1];
  if (lastFailure) next.push(`Fix what made ${commandLine(lastFailure)} fail, then run it again`);
  next.push("Read the messages kept after this summary: they continue the work verbatim");
  out.push("## Next Steps", next.map((s, i) => `${i + 1}. ${s}`).join("\n"), "");

  out.push("## Critical Context", criticalContext(f, blocked, previousSummary, context).join("\n"));
  return out.join("\n");
}

/** The split turn's early part in Pi's turn-prefix format. */
function turnPrefixSummary(messages: AgentMessage[], context: LocalSummaryContext): string {
  const f = collect(messages);
  const blocked = blockers(f);
  const out: string[] = [
    "## Original Request",
    f.requests.some((r) => r.text !== "")
      ? clip(f.requests.find((r) => r.text !== "")?.text ?? "", CAP.prefixRequest)
      : "(no user request in this part of the turn)",
  ];
  if (context.customInstructions) out.push("", `Focus requested for this summary: ${clip(context.customInstructions, 600)}`);
  const progress: string[] = [];
  for (const path of f.read.slice(0, CAP.modifiedListed)) progress.push(`- Read \`${path}\``);
  for (const [path, n] of [...f.modified.entries()].slice(0, CAP.modifiedListed))
    progress.push(`- Modified \`${path}\` (${plural(n.edits + n.writes, "change")})`);
  for (const c of lastN(f.commands, CAP.commands)) progress.push(`- Ran ${commandLine(c)}`);
  for (const d of lastN(f.decisions, 4))
    progress.push(`- ${d.files.length > 0 ? `Changed ${d.files.map((p) => `\`${p}\``).join(", ")}: ` : ""}${clip(d.text, CAP.decision)}`);
  progress.push(`- ${plural(f.toolCalls, "tool call")} (${f.failedCalls} failed)`);
  out.push("", "## Progress So Far", progress.join("\n"));
  const needed: string[] = [];
  for (const e of lastN(blocked.errors, CAP.errors)) needed.push(`- ${e}`);
  for (const c of lastN(blocked.failures, 4)) needed.push(`- Still failing: ${failureLine(c)}`);
  if (f.lastReply) needed.push("- Last assistant text in this part of the turn:", clipBlock(f.lastReply, CAP.lastReply, "  > "));
  out.push("", "## Context Needed to Continue", needed.length > 0 ? needed.join("\n") : "- (none)");
  return out.join("\n");
}

/** What the zero-model summary is made from (the fields of a compaction preparation it reads). */
export interface LocalSummaryInput {
  messagesToSummarize: AgentMessage[];
  turnPrefixMessages: AgentMessage[];
  isSplitTurn: boolean;
  previousSummary?: string;
}

/**
 * The zero-model summary of a compaction, without the file tags (the caller appends them, as
 * Pi's `compact()` does). Same shape as Pi's: for a split turn, the history summary (or the
 * previous summary, or "No prior history." when nothing precedes the turn), `---`, then the turn
 * prefix under "**Turn Context (split turn):**".
 */
export function localSummary(input: LocalSummaryInput, context: LocalSummaryContext = {}): string {
  if (input.isSplitTurn && input.turnPrefixMessages.length > 0) {
    const history =
      input.messagesToSummarize.length > 0
        ? historySummary(input.messagesToSummarize, input.previousSummary, context, true)
        : (input.previousSummary ?? "No prior history.");
    return mergeSplitTurn(history, turnPrefixSummary(input.turnPrefixMessages, context));
  }
  return historySummary(input.messagesToSummarize, input.previousSummary, context, false);
}
