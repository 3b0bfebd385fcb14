/**
 * Building the model-backed summarizer (docs/design.md §3): resolve the model (model-resolve.ts),
 * find its credentials the way Pi does (credentials.ts), pick the outage fallback —
 * `--fallback-model`, else the session's own model when the summarizer model is another one — and
 * build the pi-ai summarizer (llm.ts). Everything that can be wrong with the choice is reported
 * here, before any file is touched. Loaded on demand: pi-ai's provider catalog is only read when a
 * model is asked for.
 */
import { type Api, calculateCost, type Model } from "@earendil-works/pi-ai";
import { join } from "node:path";
import type { PruneConfig } from "../config/config.js";
import type { Session } from "../session/session.js";
import { agentDir } from "../session/locate.js";
import { UsageError } from "../util/errors.js";
import { readAuthFile, resolveHeaderValues, resolveProviderAuth, type StoredCredential } from "./credentials.js";
import type { PricedModel } from "./estimate.js";
import { createLlmSummarizer } from "./llm.js";
import { ModelCatalog, formatModelRef, parseModelRef, sessionModelRef, type ModelRef } from "./model-resolve.js";
import { modelHeaders, readModelsFile } from "./models-config.js";
import { buildModels, type RuntimeModel } from "./runtime.js";
import type { Summarizer, SummarizerChoice, SummarizerDeps } from "./types.js";

/** Files and catalog shared by every session of one run. */
export interface ModelSetup {
  catalog: ModelCatalog;
  stored: Record<string, StoredCredential>;
  authPath: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Read auth.json, models.json and Pi's cached catalog from `$PI_CODING_AGENT_DIR`.
 * @throws UsageError when one of them cannot be used
 */
export function loadModelSetup(env: NodeJS.ProcessEnv = process.env): ModelSetup {
  const dir = agentDir(env);
  const authPath = join(dir, "auth.json");
  const config = readModelsFile(join(dir, "models.json"));
  return { catalog: ModelCatalog.load(config, join(dir, "models-store.json")), stored: readAuthFile(authPath), authPath, env };
}

/**
 * A resolved model with its credentials and model headers.
 * @param what how the model was chosen (`--model`, `summarizerModel`, `the session's model`): every
 *   error starts with it and the model, so a missing key names where the provider came from
 * @throws UsageError
 */
export async function prepareModel(setup: ModelSetup, ref: ModelRef, what: string): Promise<RuntimeModel> {
  try {
    return await prepareResolved(setup, ref, what);
  } catch (error) {
    const prefix = `${what} ${formatModelRef(ref)}`;
    if (!(error instanceof UsageError) || error.message.startsWith(prefix)) throw error;
    const why =
      what === "the session's model"
        ? ' (with summarizerModel "default" the summarizer uses the model the session ran on; name another with --model provider/id)'
        : "";
    throw new UsageError(`${prefix}${why}: ${error.message}`);
  }
}

async function prepareResolved(setup: ModelSetup, ref: ModelRef, what: string): Promise<RuntimeModel> {
  const model = setup.catalog.resolve(ref, what);
  const config = setup.catalog.providerConfig(model.provider);
  const path = setup.catalog.config?.path ?? "models.json";
  const builtin = setup.catalog.builtin(model.provider);
  const auth = await resolveProviderAuth({
    provider: model.provider,
    stored: setup.stored,
    authPath: setup.authPath,
    configured: config ? { apiKey: config.apiKey, headers: config.headers, authHeader: config.authHeader, path } : undefined,
    builtin,
    env: setup.env,
  });
  const raw = modelHeaders(config, model.id);
  const headers = resolveHeaderValues(raw, { description: `model ${formatModelRef(ref)} in ${path}`, env: setup.env });
  return { model: headers ? { ...model, headers: { ...model.headers, ...headers } } : model, auth, builtin };
}

/**
 * The model a session is summarized with, and how it was chosen (`--model`, `summarizerModel`, or
 * the session's own model for `default`).
 * @throws UsageError for a bad reference, or `default` on a session that records no model
 */
export function summarizerModelRef(choice: SummarizerChoice, config: PruneConfig, session: Session): { ref: ModelRef; what: string } {
  if (choice.model) return { ref: parseModelRef(choice.model, "--model"), what: "--model" };
  if (config.summarizerModel !== "default") return { ref: parseModelRef(config.summarizerModel, "summarizerModel"), what: "summarizerModel" };
  const sessionRef = sessionModelRef(session.branch);
  if (sessionRef) return { ref: sessionRef, what: "the session's model" };
  throw new UsageError(`${session.path}: the session records no model to summarize with (summarizerModel is "default"); name one with --model provider/id`);
}

/**
 * The model a session would be summarized with, resolved in the catalog (auth.json and keys are not
 * needed: `--estimate` calls no model).
 * @throws UsageError for a bad reference, an unknown provider or model, an unusable models.json
 */
export function resolveSummarizerModel(choice: SummarizerChoice, config: PruneConfig, session: Session, env: NodeJS.ProcessEnv = process.env): PricedModel {
  const dir = agentDir(env);
  const catalog = ModelCatalog.load(readModelsFile(join(dir, "models.json")), join(dir, "models-store.json"));
  const { ref, what } = summarizerModelRef(choice, config, session);
  return pricedModel(catalog.resolve(ref, what));
}

/** A model with pi-ai's price per request (`calculateCost`, tiers included). */
export function pricedModel(model: Model<Api>): PricedModel {
  return {
    name: formatModelRef(model),
    priced: model.cost.input > 0 || model.cost.output > 0,
    price: (input, output) =>
      calculateCost(model, {
        input,
        output,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: input + output,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      }).total,
  };
}

/**
 * Build the LLM summarizer for a session.
 * @throws UsageError when the model cannot be used: bad reference, unknown provider or model,
 *   missing API key (naming the environment variables pi-ai reads), OAuth-only credentials,
 *   unusable auth.json / models.json, no model recorded in the session for `default`
 */
export async function createModelSummarizer(choice: SummarizerChoice, config: PruneConfig, session: Session, deps: SummarizerDeps = {}): Promise<Summarizer> {
  const setup = loadModelSetup(deps.env ?? process.env);
  const sessionRef = sessionModelRef(session.branch);
  const { ref: primaryRef, what } = summarizerModelRef(choice, config, session);
  const primary = await prepareModel(setup, primaryRef, what);

  let fallback: RuntimeModel | null = null;
  let noFallback: string | undefined;
  if (choice.fallbackModel) {
    fallback = await prepareModel(setup, parseModelRef(choice.fallbackModel, "--fallback-model"), "--fallback-model");
  } else if (sessionRef && what !== "the session's model" && formatModelRef(sessionRef) !== formatModelRef(primaryRef)) {
    // The session's model is only a safety net: when it cannot be used, run without a fallback (said
    // once the summarizer model fails: then it matters).
    try {
      fallback = await prepareModel(setup, sessionRef, "fallback");
    } catch (error) {
      noFallback = `the session's model ${formatModelRef(sessionRef)} cannot be used (${firstClause((error as Error).message, `fallback ${formatModelRef(sessionRef)}: `)})`;
    }
  }
  const models = buildModels(fallback ? [primary, fallback] : [primary]);
  return createLlmSummarizer({
    models,
    model: primary.model,
    fallback: fallback?.model ?? null,
    thinking: config.summarizerThinking,
    idleTimeoutMs: config.summarizerIdleTimeoutMs,
    maxTimeoutMs: config.summarizerMaxTimeoutMs,
    retry: deps.retry,
    fallbackCooldownMs: deps.fallbackCooldownMs,
    onNotice: deps.onNotice,
    noFallback,
  });
}

/** The first clause of an error message after `prefix`: `no API key for provider "zai"`, `unknown provider "x"`. */
function firstClause(message: string, prefix: string): string {
  const rest = message.startsWith(prefix) ? message.slice(prefix.length) : message;
  const cut = rest.search(/\. |: | \(/);
  return cut > 0 ? rest.slice(0, cut) : rest;
}
