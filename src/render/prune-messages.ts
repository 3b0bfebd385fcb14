/**
 * `pruneMessages` (docs/design.md §7): the context Pi would send once the pruner has run, in four
 * phases — stub-replace, error purge, chain-range prune, orphan sweep. A render that changes
 * nothing returns the very same array.
 */
import type { AgentMessage } from "../session/types.js";
import { applyChainCompressions } from "./chain-range-prune.js";
import { dedupDiagnostics } from "./diagnostics.js";
import { purgeErroredArgs } from "./error-purge.js";
import { orphanSweepDiagnostic, sweepOrphanToolResults } from "./orphan-sweep.js";
import { stubReplace } from "./stub-replace.js";
import type { PhaseResult, PruneContext, PruneResult, RenderDiagnostic } from "./types.js";

/**
 * Run the phases in order: stub-replace → error purge → chain-range prune → orphan sweep. Each
 * phase returns its input array when it changes nothing, so a render that changes nothing returns
 * `messages` itself.
 * @param messages Pi's projection of the branch (AgentMessages, before `convertToLlm`)
 */
export function pruneMessages(messages: AgentMessage[], ctx: PruneContext): PruneResult {
  const phases: PhaseResult[] = [];
  const diagnostics: RenderDiagnostic[] = [];

  // Phase 1: stub-replace.
  let current = stubReplace(messages, ctx.indexer, ctx.isProtected, ctx.config.recoveryGraceTurns);
  phases.push({ phase: "stub-replace", messages: current });

  // Phase 2: error purge.
  current = purgeErroredArgs(current, ctx.config.purgeErrors);
  phases.push({ phase: "error-purge", messages: current });

  // Phase 3: chain-range prune.
  current = applyChainCompressions(current, ctx, diagnostics);
  phases.push({ phase: "chain-range-prune", messages: current });

  // Phase 4: orphan sweep (always).
  const swept = sweepOrphanToolResults(current);
  if (swept.swept.length > 0) diagnostics.push(orphanSweepDiagnostic(swept.swept));
  current = swept.messages;
  phases.push({ phase: "orphan-sweep", messages: current });

  return { messages: current, phases, diagnostics: dedupDiagnostics(diagnostics) };
}
