/**
 * Pi's `models.json` (`$PI_CODING_AGENT_DIR/models.json`; Pi's docs/models-configuration.md):
 * custom providers and models, and overlays on built-in ones. condense reads the fields that
 * matter for one summarizer request — `baseUrl`, `api`, `apiKey`, `headers`, `authHeader`,
 * `models` (`id`, `name`, `api`, `baseUrl`, `reasoning`, `thinkingLevelMap`, `input`, `cost`,
 * `contextWindow`, `maxTokens`, `headers`, `compat`, sampling parameters) and `modelOverrides` —
 * and passes the rest through untouched. Like Pi, `//` comments and trailing commas are allowed.
 */
import type { Api, Model } from "@earendil-works/pi-ai";
import { readRegularFileSync } from "../util/files.js";
import { errnoWords, UsageError } from "../util/errors.js";

export interface ModelDefinition {
  id: string;
  name?: string;
  api?: string;
  baseUrl?: string;
  reasoning?: boolean;
  thinkingLevelMap?: Record<string, string | null>;
  input?: ("text" | "image")[];
  cost?: Partial<Model<Api>["cost"]>;
  contextWindow?: number;
  maxTokens?: number;
  headers?: Record<string, string>;
  compat?: Record<string, unknown>;
  samplingParams?: Record<string, unknown>;
  samplingParamsByThinkingLevel?: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
}

export interface ProviderConfig {
  name?: string;
  baseUrl?: string;
  apiKey?: string;
  api?: string;
  headers?: Record<string, string>;
  compat?: Record<string, unknown>;
  authHeader?: boolean;
  oauth?: string;
  models?: ModelDefinition[];
  modelOverrides?: Record<string, Partial<ModelDefinition>>;
  [key: string]: unknown;
}

export interface ModelsConfig {
  path: string;
  providers: Record<string, ProviderConfig>;
}

/** Pi's comment stripping: `//` line comments and trailing commas, never inside strings. */
export function stripJsonComments(text: string): string {
  return text
    .replace(/"(?:\\.|[^"\\])*"|\/\/[^\n]*/g, (m) => (m[0] === '"' ? m : ""))
    .replace(/"(?:\\.|[^"\\])*"|,(\s*[}\]])/g, (m, tail: string | undefined) => tail ?? (m[0] === '"' ? m : ""));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function check(ok: boolean, path: string, where: string, expected: string): void {
  if (!ok) throw new UsageError(`${path}: ${where}: expected ${expected}`);
}

function checkStringMap(v: unknown, path: string, where: string): void {
  check(v === undefined || (isObject(v) && Object.values(v).every((s) => typeof s === "string")), path, where, "an object of strings");
}

function checkModelFields(m: Record<string, unknown>, path: string, where: string): void {
  for (const key of ["name", "api", "baseUrl"] as const)
    check(m[key] === undefined || (typeof m[key] === "string" && m[key] !== ""), path, `${where}.${key}`, "a non-empty string");
  check(m.reasoning === undefined || typeof m.reasoning === "boolean", path, `${where}.reasoning`, "true or false");
  for (const key of ["contextWindow", "maxTokens"] as const)
    check(m[key] === undefined || (typeof m[key] === "number" && (m[key] as number) > 0), path, `${where}.${key}`, "a number above 0");
  check(
    m.input === undefined || (Array.isArray(m.input) && m.input.every((x) => x === "text" || x === "image")),
    path,
    `${where}.input`,
    `an array of "text" / "image"`,
  );
  check(
    m.cost === undefined || (isObject(m.cost) && Object.entries(m.cost).every(([k, x]) => k === "tiers" || typeof x === "number")),
    path,
    `${where}.cost`,
    "an object of numbers (input, output, cacheRead, cacheWrite)",
  );
  checkStringMap(m.headers, path, `${where}.headers`);
  for (const key of ["compat", "thinkingLevelMap", "samplingParams", "samplingParamsByThinkingLevel"] as const)
    check(m[key] === undefined || isObject(m[key]), path, `${where}.${key}`, "an object");
}

/**
 * Read and check models.json. A missing file is no configuration.
 * @throws UsageError naming the file and the field when it cannot be used
 */
export function readModelsFile(path: string): ModelsConfig | null {
  let text: string;
  try {
    text = readRegularFileSync(path, "utf8"); // a FIFO is refused, not waited on
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new UsageError(`${path}: cannot read: ${errnoWords(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripJsonComments(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
  } catch (error) {
    throw new UsageError(`${path}: not valid JSON: ${(error as Error).message}`);
  }
  check(isObject(parsed) && isObject(parsed.providers), path, "root", `an object with "providers"`);
  const providers = (parsed as { providers: Record<string, unknown> }).providers;
  for (const [id, p] of Object.entries(providers)) {
    const where = `providers.${id}`;
    check(isObject(p), path, where, "an object");
    const c = p as Record<string, unknown>;
    for (const key of ["name", "baseUrl", "apiKey", "api"] as const)
      check(c[key] === undefined || (typeof c[key] === "string" && c[key] !== ""), path, `${where}.${key}`, "a non-empty string");
    check(c.authHeader === undefined || typeof c.authHeader === "boolean", path, `${where}.authHeader`, "true or false");
    checkStringMap(c.headers, path, `${where}.headers`);
    check(c.compat === undefined || isObject(c.compat), path, `${where}.compat`, "an object");
    check(c.models === undefined || Array.isArray(c.models), path, `${where}.models`, "an array");
    for (const [i, m] of ((c.models as unknown[]) ?? []).entries()) {
      check(isObject(m) && typeof m.id === "string" && m.id !== "", path, `${where}.models[${i}]`, `an object with a non-empty "id"`);
      checkModelFields(m as Record<string, unknown>, path, `${where}.models[${i}]`);
    }
    check(c.modelOverrides === undefined || isObject(c.modelOverrides), path, `${where}.modelOverrides`, "an object by model id");
    for (const [mid, o] of Object.entries((c.modelOverrides as Record<string, unknown>) ?? {})) {
      check(isObject(o), path, `${where}.modelOverrides.${mid}`, "an object");
      checkModelFields(o as Record<string, unknown>, path, `${where}.modelOverrides.${mid}`);
    }
  }
  return { path, providers: providers as Record<string, ProviderConfig> };
}

const ZERO_COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/** A `models` entry as a pi-ai model (Pi's defaults: 128k context, 16,384 output tokens, text input, no cost). */
function modelFromDefinition(providerId: string, def: ModelDefinition, provider: ProviderConfig, defaults: Model<Api> | undefined, path: string): Model<Api> {
  const api = def.api ?? provider.api ?? defaults?.api;
  if (!api) throw new UsageError(`${path}: provider ${providerId}, model ${def.id}: no "api" (set it on the provider or the model, e.g. "openai-completions")`);
  const baseUrl = def.baseUrl ?? provider.baseUrl ?? defaults?.baseUrl;
  if (!baseUrl) throw new UsageError(`${path}: provider ${providerId}: "baseUrl" is required for custom models`);
  const model: Model<Api> = {
    id: def.id,
    name: def.name ?? def.id,
    api,
    provider: providerId,
    baseUrl,
    reasoning: def.reasoning ?? false,
    input: def.input ?? ["text"],
    cost: { ...ZERO_COST, ...def.cost } as Model<Api>["cost"],
    contextWindow: def.contextWindow ?? 128000,
    maxTokens: def.maxTokens ?? 16384,
  };
  if (def.thinkingLevelMap) model.thinkingLevelMap = def.thinkingLevelMap;
  if (def.samplingParams) model.samplingParams = def.samplingParams;
  if (def.samplingParamsByThinkingLevel) model.samplingParamsByThinkingLevel = def.samplingParamsByThinkingLevel as Model<Api>["samplingParamsByThinkingLevel"];
  const compat = provider.compat || def.compat ? { ...provider.compat, ...def.compat } : undefined;
  if (compat) (model as { compat?: unknown }).compat = compat;
  return model;
}

function applyOverride(model: Model<Api>, o: Partial<ModelDefinition>): Model<Api> {
  const out: Model<Api> = { ...model };
  if (o.name !== undefined) out.name = o.name;
  if (o.reasoning !== undefined) out.reasoning = o.reasoning;
  if (o.thinkingLevelMap) out.thinkingLevelMap = { ...model.thinkingLevelMap, ...o.thinkingLevelMap };
  if (o.input) out.input = o.input;
  if (o.cost) out.cost = { ...model.cost, ...o.cost } as Model<Api>["cost"];
  if (o.contextWindow !== undefined) out.contextWindow = o.contextWindow;
  if (o.maxTokens !== undefined) out.maxTokens = o.maxTokens;
  if (o.samplingParams) out.samplingParams = { ...model.samplingParams, ...o.samplingParams };
  if (o.compat) (out as { compat?: unknown }).compat = { ...(model.compat as object | undefined), ...o.compat };
  return out;
}

/**
 * A provider's chat models after models.json: built-in models (moved to the provider's `baseUrl`
 * when one is set), then `models` entries added or replacing the same id, then `modelOverrides`.
 * Header values are not resolved here (see `modelHeaders`).
 * @throws UsageError for a custom model without `api` or `baseUrl`
 */
export function composeProviderModels(providerId: string, builtin: readonly Model<Api>[], config: ProviderConfig | undefined, path: string): Model<Api>[] {
  if (!config) return [...builtin];
  const models = builtin.map((m) => (config.baseUrl ? { ...m, baseUrl: config.baseUrl } : { ...m }));
  for (const def of config.models ?? []) {
    const existing = models.findIndex((m) => m.id === def.id);
    const api = def.api ?? config.api;
    const defaults =
      models.find((m) => m.id === def.id) ??
      (api ? models.find((m) => m.api === api) : undefined) ??
      models.find((m) => m.api === "openai-completions") ??
      models[0];
    const model = modelFromDefinition(providerId, def, config, defaults, path);
    if (existing >= 0) models[existing] = model;
    else models.push(model);
  }
  return models.map((m) => (config.modelOverrides?.[m.id] ? applyOverride(m, config.modelOverrides[m.id]) : m));
}

/** The raw (unresolved) headers models.json gives one model: its override's, then its definition's. */
export function modelHeaders(config: ProviderConfig | undefined, modelId: string): Record<string, string> | undefined {
  const headers = { ...config?.modelOverrides?.[modelId]?.headers, ...config?.models?.find((m) => m.id === modelId)?.headers };
  return Object.keys(headers).length > 0 ? headers : undefined;
}
