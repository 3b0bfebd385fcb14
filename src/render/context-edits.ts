/**
 * Native mode (docs/design.md §11): the render of a branch written as Pi 1.6's own
 * `context_edit` entries, so that stock Pi — without the pi-condense extension — sends the pruned
 * context. Found by diffing: Pi's projection of the branch (every edit on it applied), then
 * `pruneMessages` on it with stock Pi's wording, each output message traced to the input message
 * it came from; an entry whose message the render changed gets `{ content }`, one whose message the
 * render dropped gets `null`. An edit cannot insert a message, so the `<compressed-chain>` block the
 * render inserts after a chain's first user message goes into that message, as its first block
 * (the one placement the extension and condense both read as "already applied": ARCHITECTURE.md).
 *
 * The render runs on the projection with the edits already written, and every phase is idempotent
 * on its own output, so planning again plans nothing, and a later run only takes pruning further
 * (raw → stub → omitted; content → more pruned content): an edit is never contradicted. For that,
 * error purge is keyed per occurrence here (a failure purges the call it answers), not by the bare
 * id as the extension keys it: a later failure with the same id that the orphan sweep removes
 * would otherwise hide an earlier one until the removal is written. Rules:
 * - only targets Pi's `appendContextEdit` accepts (`isEditableTarget`); anything else the render
 *   changes is reported as `unrepresentable` and left;
 * - a target whose latest edit is not condense's while an earlier one is (a user undid condense's
 *   edit) is left as the user has it (`keptForeign`), and so is the rest of its tool turn;
 * - a stubbed result whose stub already names the same ref is left (no churn when wording changes);
 * - the latest assistant message's thinking is never changed (asserted).
 */
import { isDeepStrictEqual } from "node:util";
import { type BranchContext, isEditableTarget, projectContext, type ContextItem } from "../context/projection.js";
import { isStubText, type PairingRules, stubRef, walkToolPairs } from "../context/vocabulary.js";
import type { AgentMessage, ContextEditEntry, SessionEntry } from "../session/types.js";
import { CondenseError } from "../util/errors.js";
import { pruneMessages } from "./prune-messages.js";
import type { PruneContext } from "./types.js";

/** What an edit does: a result's stub, an assistant's purged arguments or stripped thinking, a chain block carried by its first user message, a message omitted. */
export type ContextEditKind = "stub" | "assistant" | "carrier" | "omit";

/** One planned `context_edit` (the plan lists them in write order: {@link writeOrder}). */
export interface PlannedContextEdit {
  targetId: string;
  replacement: { content: string | unknown[] } | null;
  kind: ContextEditKind;
}

export interface ContextEditPlan {
  edits: PlannedContextEdit[];
  /** Entries the render changes that no context edit may change, with why. */
  unrepresentable: { entryId: string; reason: string }[];
  /** Targets left as a later edit by someone else has them (and the rest of their tool turns). */
  keptForeign: string[];
}

/** What the render wants for one projected message: its content, or omitted (null), or nothing changed. */
type Desired = { content: string | unknown[] } | null | typeof UNCHANGED;
const UNCHANGED = Symbol("unchanged");

const asBlocks = (content: unknown): unknown[] => (typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : []);

/**
 * Per visible message: what the render made of it — the output message's content, a carried chain
 * block in front when one was inserted right after it, or null when the render dropped it.
 * @throws CondenseError (exit 1) when an inserted block does not follow a user message (a bug)
 */
function desiredStates(visible: ContextItem[], ctx: PruneContext): Desired[] {
  // Error purge per occurrence (render/error-purge.ts): the extension's bare-id rule is no fixed point.
  const pruned = pruneMessages(
    visible.map((i) => i.message),
    { ...ctx, errorPurge: "occurrence" },
  );
  const out: (AgentMessage | null)[] = visible.map(() => null);
  const carried = new Map<number, unknown[]>();
  let previous: number | null = null;
  pruned.messages.forEach((m, k) => {
    const origin = pruned.origins[k];
    if (origin !== null) {
      out[origin] = m;
      previous = origin;
      return;
    }
    if (previous === null || visible[previous].message.role !== "user") {
      throw new CondenseError("internal error: a <compressed-chain> block does not follow its chain's first user message; nothing was written", 1);
    }
    carried.set(previous, [...(carried.get(previous) ?? []), ...asBlocks((m as { content?: unknown }).content)]);
  });
  return out.map((m, i) => {
    if (!m) return null;
    const blocks = carried.get(i);
    // Untouched (the same object): whatever the message holds is what the render wants.
    if (m === visible[i].message && !blocks) return UNCHANGED;
    const content = (m as { content?: string | unknown[] }).content ?? [];
    return { content: blocks ? [...blocks, ...asBlocks(content)] : content };
  });
}

/** The single stub text of a tool result's content, if that is what it is. */
function stubTextOf(message: AgentMessage, content: unknown): string | undefined {
  if (message.role !== "toolResult" || !Array.isArray(content) || content.length !== 1) return undefined;
  const block = content[0] as { type?: unknown; text?: unknown };
  return block?.type === "text" && typeof block.text === "string" && isStubText(block.text) ? block.text : undefined;
}

/** True when `current` already is what `desired` asks for (a stub naming the same ref counts). */
function satisfied(message: AgentMessage, desired: { content: string | unknown[] }): boolean {
  const current = (message as { content?: unknown }).content;
  if (isDeepStrictEqual(current, desired.content)) return true;
  const have = stubTextOf(message, current);
  const want = stubTextOf(message, desired.content);
  return have !== undefined && want !== undefined && stubRef(have) === stubRef(want);
}

function kindOf(message: AgentMessage, desired: Desired, carrier: boolean): ContextEditKind {
  if (desired === null) return "omit";
  if (carrier) return "carrier";
  return message.role === "toolResult" ? "stub" : "assistant";
}

/** The context edits on the entry list, per target, in order. */
function editHistory(entries: SessionEntry[]): Map<string, ContextEditEntry[]> {
  const history = new Map<string, ContextEditEntry[]>();
  for (const e of entries) {
    if (e.type !== "context_edit") continue;
    const edit = e as ContextEditEntry;
    history.set(edit.targetId, [...(history.get(edit.targetId) ?? []), edit]);
  }
  return history;
}

/** A later edit by someone else undid one of condense's: leave the target as it is. */
function userOverrode(history: ContextEditEntry[] | undefined, own: ReadonlySet<string>): boolean {
  if (!history || history.length < 2 || own.has(history[history.length - 1].id)) return false;
  return history.some((e) => own.has(e.id));
}

/** Tool turns as providers see them: a result belongs to the call of the latest assistant message. */
const TURN_PAIRING: PairingRules = { scope: "turn", between: "close", consume: true };

/**
 * Visible indexes of each tool turn's members (the assistant message and the results answering
 * it), by the assistant's index.
 */
function toolTurns(visible: ContextItem[]): Map<number, number[]> {
  const turns = new Map<number, number[]>();
  walkToolPairs(
    visible.map((i) => i.message),
    TURN_PAIRING,
    {
      assistant: (i) => turns.set(i, [i]),
      result: (i, _m, call) => {
        if (call) turns.get(call.assistantIndex)?.push(i);
      },
    },
  );
  return turns;
}

/**
 * Plan the context edits that make Pi's projection of `branch` the render of it.
 * @param branch root → leaf, including any entries the run appends before the edits
 * @param ctx the index of that branch, the configuration and its protection test, and stock Pi's
 *   wording (`{ target: "pi", recovery }`)
 * @param ownEditIds ids of the `context_edit` entries condense wrote (`entries/read.ts` `ownContextEditIds`)
 * @param projected Pi's projection of `branch`, when the caller has it (`extendContext`; else projected here)
 * @throws CondenseError (exit 1) when a plan would change the latest assistant message's thinking (a bug)
 */
export function planContextEdits(branch: SessionEntry[], ctx: PruneContext, ownEditIds: ReadonlySet<string>, projected?: BranchContext): ContextEditPlan {
  const context = projected ?? projectContext(branch);
  // As Pi runs the extension's handler: the render sees the context without its system messages.
  const visible = context.items.filter((i) => i.message.role !== "system");
  const desired = desiredStates(visible, ctx);
  const history = editHistory(context.entries);
  const plan: ContextEditPlan = { edits: [], unrepresentable: [], keptForeign: [] };
  const wanted = new Map<number, PlannedContextEdit>();
  const held = new Set<number>();
  visible.forEach((item, i) => {
    const want = desired[i];
    if (want === UNCHANGED || (want !== null && satisfied(item.message, want))) return;
    const { entry } = item;
    if (!isEditableTarget(entry)) {
      plan.unrepresentable.push({
        entryId: entry.id,
        reason: `a ${entry.type === "message" ? `${item.message.role} message` : entry.type} entry cannot be edited`,
      });
      held.add(i);
    } else if (userOverrode(history.get(entry.id), ownEditIds)) {
      plan.keptForeign.push(entry.id);
      held.add(i);
    } else {
      const carrier = want !== null && item.message.role === "user";
      wanted.set(i, { targetId: entry.id, replacement: want, kind: kindOf(item.message, want, carrier) });
    }
  });
  // A tool turn is omitted whole or not at all: a held member keeps the others' omissions out.
  // (Nothing held, nothing kept: the turns are walked only then.)
  for (const members of held.size > 0 ? toolTurns(visible).values() : []) {
    if (!members.some((i) => held.has(i))) continue;
    for (const i of members) {
      if (wanted.get(i)?.replacement !== null) continue;
      wanted.delete(i);
      plan.keptForeign.push(visible[i].entry.id);
    }
  }
  assertLatestThinkingKept(visible, wanted);
  plan.edits = writeOrder(visible, wanted);
  return plan;
}

/**
 * The order the edits are appended in, so that every prefix of the append — what a Pi that reads
 * the file during a torn or killed write sends — is valid for providers: first every `{content}`
 * edit (stubs, purged arguments, stripped thinking, chain blocks carried by their first user
 * message: none removes a tool call or a message), then the `null` edits of other messages (tool
 * results, summaries, messages between a call and its result), then those of assistant messages.
 * A prefix may then hold a call whose result is left out, which pi-ai answers with "No result
 * provided", but never a result whose call is left out, which providers reject. Within each group,
 * branch order.
 */
function writeOrder(visible: ContextItem[], wanted: Map<number, PlannedContextEdit>): PlannedContextEdit[] {
  // One pass: `wanted` is filled in ascending index (planContextEdits; a Map iterates in insertion
  // order, deletions keep it), so each group is in branch order as it is filled.
  const content: PlannedContextEdit[] = [];
  const others: PlannedContextEdit[] = [];
  const assistants: PlannedContextEdit[] = [];
  for (const [i, edit] of wanted) {
    if (edit.replacement !== null) content.push(edit);
    else if (visible[i].message.role === "assistant") assistants.push(edit);
    else others.push(edit);
  }
  return [...content, ...others, ...assistants];
}

/** The latest assistant message keeps its thinking blocks exactly (providers check their signatures). */
function assertLatestThinkingKept(visible: ContextItem[], wanted: Map<number, PlannedContextEdit>): void {
  let last = -1;
  visible.forEach((item, i) => {
    if (item.message.role === "assistant") last = i;
  });
  const edit = wanted.get(last);
  if (!edit) return;
  const thinking = (content: unknown) => asBlocks(content).filter((b) => (b as { type?: unknown })?.type === "thinking");
  const before = thinking((visible[last].message as { content?: unknown }).content);
  if (before.length === 0) return;
  if (edit.replacement === null || !isDeepStrictEqual(thinking(edit.replacement.content), before)) {
    throw new CondenseError("internal error: a context edit would change the latest assistant message's thinking; nothing was written", 1);
  }
}
