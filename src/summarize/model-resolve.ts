/**
 * Which model writes the summaries (docs/design.md §3): `--model provider/id`, else a concrete
 * `summarizerModel`, else (`default`) the session's own model — the last model change or assistant
 * message on the active branch, as Pi's `getSessionContextSettings` picks it.
 *
 * Models come from pi-ai's built-in catalog, overlaid with `models.json` (custom providers and
 * models, `baseUrl` moves, `modelOverrides`), plus the newer catalog Pi caches in
 * `models-store.json` for ids the built-in catalog does not know yet.
 */
import type { Api, Model, Provider } from "@earendil-works/pi-ai";
import { builtinProviders } from "@earendil-works/pi-ai/providers/all";
import { readRegularFileSync } from "../util/files.js";
import { isMessageEntry, type SessionEntry } from "../session/types.js";
import { UsageError } from "../util/errors.js";
import { composeProviderModels, type ModelsConfig, type ProviderConfig } from "./models-config.js";

/** `provider/model-id`; the id may itself contain slashes (`openrouter/anthropic/claude-x`). */
export interface ModelRef {
  provider: string;
  id: string;
}

export function formatModelRef(ref: ModelRef): string {
  return `${ref.provider}/${ref.id}`;
}

/** Split at the first `/`. @throws UsageError when either side is empty */
export function parseModelRef(text: string, what = "--model"): ModelRef {
  const slash = text.indexOf("/");
  const provider = slash > 0 ? text.slice(0, slash).trim() : "";
  const id = slash > 0 ? text.slice(slash + 1).trim() : "";
  if (provider === "" || id === "") throw new UsageError(`${what} ${JSON.stringify(text)}: expected provider/model-id, e.g. anthropic/claude-haiku-4-5`);
  return { provider, id };
}

/**
 * The session's own model: the last `model_change` (`provider` + `modelId`, or a fork's single
 * `model: "provider/id"` field, whose `role` when present must be `default`) or assistant message
 * (`provider` + `model`) on the branch. Null when the branch records none.
 */
export function sessionModelRef(branch: readonly SessionEntry[]): ModelRef | null {
  let found: ModelRef | null = null;
  for (const entry of branch) {
    if (entry.type === "model_change") {
      if (typeof entry.provider === "string" && typeof entry.modelId === "string" && entry.provider !== "" && entry.modelId !== "") {
        found = { provider: entry.provider, id: entry.modelId };
      } else if (typeof entry.model === "string" && (entry.role === undefined || entry.role === "default")) {
        const slash = entry.model.indexOf("/");
        if (slash > 0 && slash < entry.model.length - 1) found = { provider: entry.model.slice(0, slash), id: entry.model.slice(slash + 1) };
      }
    } else if (isMessageEntry(entry) && entry.message.role === "assistant") {
      const m = entry.message;
      if (typeof m.provider === "string" && typeof m.model === "string" && m.provider !== "" && m.model !== "") found = { provider: m.provider, id: m.model };
    }
  }
  return found;
}

interface CatalogProvider {
  base?: Provider;
  config?: ProviderConfig;
  models: Model<Api>[];
}

/** Built-in providers overlaid with models.json. */
export class ModelCatalog {
  private readonly providers = new Map<string, CatalogProvider>();
  private storeModels: Record<string, Model<Api>[]> = {};

  constructor(
    builtins: readonly Provider[],
    readonly config: ModelsConfig | null,
  ) {
    for (const base of builtins) this.providers.set(base.id, { base, models: [] });
    for (const [id, providerConfig] of Object.entries(config?.providers ?? {})) {
      const entry = this.providers.get(id) ?? { models: [] };
      entry.config = providerConfig;
      this.providers.set(id, entry);
    }
  }

  /** pi-ai's built-in providers plus models.json. */
  static load(config: ModelsConfig | null, storePath?: string): ModelCatalog {
    const catalog = new ModelCatalog(builtinProviders(), config);
    if (storePath) catalog.storeModels = readModelsStore(storePath);
    return catalog;
  }

  providerIds(): string[] {
    return [...this.providers.keys()].sort();
  }

  hasProvider(id: string): boolean {
    return this.providers.has(id);
  }

  /** The built-in provider, when pi-ai has one with this id. */
  builtin(id: string): Provider | undefined {
    return this.providers.get(id)?.base;
  }

  providerConfig(id: string): ProviderConfig | undefined {
    return this.providers.get(id)?.config;
  }

  /** Chat models of a provider after models.json. @throws UsageError for an unusable models.json entry */
  models(providerId: string): Model<Api>[] {
    const entry = this.providers.get(providerId);
    if (!entry) return [];
    if (entry.models.length === 0) {
      let builtin: readonly Model<Api>[] = [];
      try {
        builtin = (entry.base?.getModels() ?? []).filter((m) => m.type === undefined || m.type === "chat");
      } catch {
        builtin = [];
      }
      entry.models = composeProviderModels(providerId, builtin, entry.config, this.config?.path ?? "models.json");
    }
    return entry.models;
  }

  /** Exact lookup, then Pi's cached newer catalog. */
  find(ref: ModelRef): Model<Api> | undefined {
    const known = this.models(ref.provider).find((m) => m.id === ref.id);
    if (known) return known;
    const stored = this.storeModels[ref.provider]?.find((m) => m.id === ref.id);
    if (!stored) return undefined;
    const config = this.providerConfig(ref.provider);
    return config?.baseUrl ? { ...stored, baseUrl: config.baseUrl } : stored;
  }

  /**
   * The model for `ref`.
   * @param what how the model was chosen, for the message ("--model", "the session's model", …)
   * @throws UsageError for an unknown provider or model, saying where valid ids are listed
   */
  resolve(ref: ModelRef, what: string): Model<Api> {
    if (!this.hasProvider(ref.provider)) {
      throw new UsageError(
        `${what} ${formatModelRef(ref)}: unknown provider "${ref.provider}". Known providers: ${this.providerIds().join(", ")}. ` +
          `A provider of your own (e.g. a local OpenAI-compatible server) goes in ${this.config?.path ?? "$PI_CODING_AGENT_DIR/models.json"}.`,
      );
    }
    const model = this.find(ref);
    if (model) return model;
    const ids = this.models(ref.provider).map((m) => m.id);
    const needle = ref.id.toLowerCase();
    const close = ids.filter((id) => id.toLowerCase().includes(needle) || needle.includes(id.toLowerCase()));
    const pool = close.length > 0 ? close : ids;
    const sample = pool.slice(0, 8);
    throw new UsageError(
      `${what} ${formatModelRef(ref)}: unknown model "${ref.id}" for provider "${ref.provider}"` +
        (sample.length > 0 ? ` (${close.length > 0 ? "similar" : "some known"} ids: ${sample.join(", ")}${pool.length > sample.length ? ", …" : ""})` : "") +
        `. List valid ids with \`pi --list-models ${ref.provider}\` or at https://pi.dev/models; add a model of your own under providers.${ref.provider}.models in models.json.`,
    );
  }
}

/** `models-store.json`: `{ [provider]: { models: Model[] } }` written by Pi's catalog refresh. Unreadable → nothing. */
function readModelsStore(path: string): Record<string, Model<Api>[]> {
  try {
    const data = JSON.parse(readRegularFileSync(path, "utf8")) as Record<string, { models?: unknown }>; // a FIFO: not waited on
    const out: Record<string, Model<Api>[]> = {};
    for (const [provider, entry] of Object.entries(data ?? {})) {
      if (!Array.isArray(entry?.models)) continue;
      out[provider] = (entry.models as Model<Api>[]).filter(
        (m) =>
          m &&
          typeof m === "object" &&
          (m.type === undefined || m.type === "chat") &&
          m.provider === provider &&
          typeof m.id === "string" &&
          typeof m.api === "string" &&
          typeof m.baseUrl === "string",
      );
    }
    return out;
  } catch {
    return {};
  }
}
