/**
 * `pruneMessages` (docs/design.md §7): the context Pi would send once the pruner has run, in four
 * phases — stub-replace, error purge, chain-range prune, orphan sweep. A render that changes
 * nothing returns the very same array.
 */
import type { AgentMessage } from "../session/types.js";
import { chainRangePrune } from "./chain-range-prune.js";
import { dedupDiagnostics } from "./diagnostics.js";
import { purgeErroredArgs, purgeErroredArgsByOccurrence } from "./error-purge.js";
import { orphanSweepDiagnostic, sweepOrphanToolResults } from "./orphan-sweep.js";
import { stubReplace } from "./stub-replace.js";
import type { PhaseResult, PruneContext, PruneResult, RenderDiagnostic } from "./types.js";

/**
 * Run the phases in order: stub-replace → error purge (keyed as `ctx.errorPurge` says) →
 * chain-range prune → orphan sweep. Each phase returns its input array when it changes nothing, so
 * a render that changes nothing returns `messages` itself.
 * @param messages Pi's projection of the branch (AgentMessages, before `convertToLlm`)
 */
export function pruneMessages(messages: AgentMessage[], ctx: PruneContext): PruneResult {
  const phases: PhaseResult[] = [];
  const diagnostics: RenderDiagnostic[] = [];
  const relocated = new Set<string>();

  // Phase 1: stub-replace (one message per input message, in place).
  let current = stubReplace(messages, ctx.indexer, ctx.isProtected, ctx.config.recoveryGraceTurns, ctx.wording);
  phases.push({ phase: "stub-replace", messages: current });

  // Phase 2: error purge (in place too).
  current = (ctx.errorPurge === "occurrence" ? purgeErroredArgsByOccurrence : purgeErroredArgs)(current, ctx.config.purgeErrors);
  phases.push({ phase: "error-purge", messages: current });

  // Phase 3: chain-range prune.
  const chained = chainRangePrune(current, ctx, diagnostics, relocated);
  current = chained.messages;
  phases.push({ phase: "chain-range-prune", messages: current });

  // Phase 4: orphan sweep (always).
  const swept = sweepOrphanToolResults(current);
  if (swept.swept.length > 0) diagnostics.push(orphanSweepDiagnostic(swept.swept));
  current = swept.messages;
  phases.push({ phase: "orphan-sweep", messages: current });

  const removed = new Set(swept.swept.map((s) => s.index));
  const origins = chained.origins.filter((_, i) => !removed.has(i));
  return { messages: current, origins, phases, diagnostics: dedupDiagnostics(diagnostics), relocated };
}
