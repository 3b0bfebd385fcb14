/**
 * The model for a model-written compaction summary, found the way `run` finds its summarizer model
 * (summarize/llm-setup.ts: pi-ai's catalog overlaid with models.json, credentials from auth.json or
 * the environment) — `--model provider/id`, else the session's own model, as Pi's `/compact` uses
 * the current model — with the session's thinking level unless `--thinking` says otherwise.
 */
import type { ThinkingLevel } from "@earendil-works/pi-ai";
import type { Session } from "../session/session.js";
import { loadModelSetup, prepareModel, type ModelSetup } from "../summarize/llm-setup.js";
import { formatModelRef, parseModelRef, sessionModelRef } from "../summarize/model-resolve.js";
import { buildModels } from "../summarize/runtime.js";
import { UsageError } from "../util/errors.js";
import type { SummaryRequestOptions } from "./model-summary.js";

/** The session's thinking level: the last `thinking_level_change` on the branch, else `off` (Pi's `getSessionContextSettings`). */
export function sessionThinkingLevel(session: Pick<Session, "branch">): ThinkingLevel | "off" {
  let level: ThinkingLevel | "off" = "off";
  for (const entry of session.branch) {
    if (entry.type === "thinking_level_change" && typeof entry.thinkingLevel === "string") level = entry.thinkingLevel as ThinkingLevel | "off";
  }
  return level;
}

/** Resolves models once per run; each session gets its request options from here. */
export class CompactionModels {
  private setup: ModelSetup | null = null;
  private readonly prepared = new Map<string, Promise<Omit<SummaryRequestOptions, "retry" | "thinkingLevel">>>();

  constructor(
    private readonly choice: { model?: string; thinking?: string },
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /**
   * Model, stream and thinking level for one session.
   * @throws UsageError when the model cannot be used (bad reference, unknown model, missing key —
   *   naming the variable pi-ai reads), or `--model` is absent and the session records no model
   */
  async forSession(session: Session): Promise<Omit<SummaryRequestOptions, "retry">> {
    const ref = this.choice.model ? parseModelRef(this.choice.model, "--model") : sessionModelRef(session.branch);
    if (!ref) throw new UsageError(`${session.path}: the session records no model to summarize with; name one with --model provider/id`);
    const key = formatModelRef(ref);
    let found = this.prepared.get(key);
    if (!found) {
      this.setup ??= loadModelSetup(this.env);
      const setup = this.setup;
      found = prepareModel(setup, ref, this.choice.model ? "--model" : "the session's model").then((runtime) => {
        const models = buildModels([runtime]);
        return { model: runtime.model, stream: (m, c, o) => models.streamSimple(m, c, o) };
      });
      this.prepared.set(key, found);
      // A failed resolution is reported for each session that needs it, not cached as a rejection forever.
      found.catch(() => this.prepared.delete(key));
    }
    const resolved = await found;
    const thinkingLevel = (this.choice.thinking as ThinkingLevel | "off" | undefined) ?? sessionThinkingLevel(session);
    return { ...resolved, thinkingLevel };
  }
}
