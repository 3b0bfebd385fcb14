/**
 * Where the summarizer's requests go: the models condense resolved, each with the credentials
 * resolved up front (credentials.ts). A model whose API its built-in provider speaks is streamed
 * by that provider (so provider-specific behaviour is kept); a custom model is streamed by pi-ai's
 * implementation of its `api`, imported once.
 */
import {
  lazyStream,
  normalizeContext,
  type Api,
  type AssistantMessageEventStream,
  type Context,
  type Model,
  type Provider,
  type ProviderStreams,
  type SimpleStreamOptions,
} from "@earendil-works/pi-ai";
import { bedrockConverseStreamApi } from "@earendil-works/pi-ai/api/bedrock-converse-stream.lazy";
import { UsageError } from "../util/errors.js";
import type { ResolvedAuth } from "./credentials.js";
import { type ExchangeFetch, keepAliveFetch, slottedFetch } from "./http-fetch.js";
import type { SendSlots } from "./slots.js";

type ApiModule = Pick<ProviderStreams, "stream" | "streamSimple">;

/** pi-ai's API implementations by `api`, loaded on first use. */
const API_MODULES: Record<string, () => Promise<ApiModule>> = {
  "anthropic-messages": () => import("@earendil-works/pi-ai/api/anthropic-messages"),
  "azure-openai-responses": () => import("@earendil-works/pi-ai/api/azure-openai-responses"),
  "google-generative-ai": () => import("@earendil-works/pi-ai/api/google-generative-ai"),
  "google-vertex": () => import("@earendil-works/pi-ai/api/google-vertex"),
  "mistral-conversations": () => import("@earendil-works/pi-ai/api/mistral-conversations"),
  "openai-codex-responses": () => import("@earendil-works/pi-ai/api/openai-codex-responses"),
  "openai-completions": () => import("@earendil-works/pi-ai/api/openai-completions"),
  "openai-responses": () => import("@earendil-works/pi-ai/api/openai-responses"),
  "pi-messages": () => import("@earendil-works/pi-ai/api/pi-messages"),
};

/**
 * An API implementation that is imported once: the first request waits for the module inside
 * pi-ai's `lazyStream`, later ones call it directly (pi-ai's own lazy wrappers import per request).
 */
function memoizedApi(load: () => Promise<ApiModule>): ProviderStreams {
  let module: ApiModule | undefined;
  let loading: Promise<ApiModule> | undefined;
  const get = (): Promise<ApiModule> => {
    loading ??= load().then((m) => {
      module = m;
      return m;
    });
    return loading;
  };
  return {
    stream: (model, context, options) =>
      module
        ? module.stream(model, context, options)
        : lazyStream(model, async () => (await get()).stream(model, context, options), undefined, options?.signal),
    streamSimple: (model, context, options) =>
      module
        ? module.streamSimple(model, context, options)
        : lazyStream(model, async () => (await get()).streamSimple(model, context, options), undefined, options?.signal),
  };
}

const memoized = new Map<string, ProviderStreams>();
const API_IMPLEMENTATIONS: Record<string, () => ProviderStreams> = {
  ...Object.fromEntries(
    Object.entries(API_MODULES).map(([api, load]) => [
      api,
      () => {
        let streams = memoized.get(api);
        if (!streams) {
          streams = memoizedApi(load);
          memoized.set(api, streams);
        }
        return streams;
      },
    ]),
  ),
  // Bedrock's module is loaded through pi-ai's own loader hook.
  "bedrock-converse-stream": bedrockConverseStreamApi,
};

/** APIs condense can call, for messages. */
export const KNOWN_APIS = Object.keys(API_IMPLEMENTATIONS);

/**
 * APIs whose provider clients take a `fetch` (pi-ai passes `options.fetch` to the OpenAI and
 * Anthropic SDKs): their requests go through one keep-alive client shared by every call of the
 * process (http-fetch.ts). Other APIs keep pi-ai's default.
 */
const SHARED_FETCH_APIS = new Set(["openai-completions", "openai-responses", "azure-openai-responses", "anthropic-messages"]);
let sharedFetch: ExchangeFetch | undefined;

/** The process's shared keep-alive client, made on first use. */
function shared(): ExchangeFetch {
  sharedFetch ??= keepAliveFetch();
  return sharedFetch;
}

/** One model to make reachable: the model, its credentials and pi-ai's built-in provider if any. */
export interface RuntimeModel {
  model: Model<Api>;
  auth: ResolvedAuth;
  builtin?: Provider;
}

function streamsFor(entry: RuntimeModel): ProviderStreams {
  const base = entry.builtin;
  if (base?.getModels().some((m) => m.api === entry.model.api)) return base;
  const make = API_IMPLEMENTATIONS[entry.model.api];
  if (!make) {
    throw new UsageError(
      `model ${entry.model.provider}/${entry.model.id}: condense cannot call the API "${entry.model.api}"; supported: ${KNOWN_APIS.join(", ")}`,
    );
  }
  return make();
}

/** Header merge where a later name replaces an earlier one whatever its case (as pi-ai's `Models` does). */
function mergeHeaders(...sets: (Record<string, string | null> | undefined)[]): Record<string, string | null> | undefined {
  let out: Record<string, string | null> | undefined;
  for (const set of sets) {
    if (!set) continue;
    out ??= {};
    for (const [name, value] of Object.entries(set)) {
      const lower = name.toLowerCase();
      for (const existing of Object.keys(out)) if (existing.toLowerCase() === lower) delete out[existing];
      out[name] = value;
    }
  }
  return out;
}

/** Where a request waits for its send slot (slots.ts), and what runs once it has one. */
export interface SendGate {
  slots: SendSlots;
  onSend?: () => void;
}

/** pi-ai's stream options, and the send gate a request may wait at inside the client. */
export type ModelStreamOptions = SimpleStreamOptions & { send?: SendGate };

/**
 * What the summarizer streams through: pi-ai's `streamSimple` contract, and for the models whose
 * requests go through condense's own HTTP client, a request that waits for its send slot there
 * (`options.send`): the SDK builds it while earlier requests are in flight.
 */
export interface ModelClient {
  streamSimple(model: Model<Api>, context: Context, options?: ModelStreamOptions): AssistantMessageEventStream;
  /** True when `options.send` is honoured for `model`: its requests wait for their slot inside the client. */
  queuesAtSend?(model: Model<Api>): boolean;
}

/**
 * What the summarizer streams through: pi-ai's `streamSimple` contract for the prepared models,
 * with their credentials applied the way pi-ai's `Models` applies resolved auth (API key, auth
 * headers then model headers then request headers, `baseUrl` override, provider env). It
 * dispatches straight to the provider or API implementation: going through a `Models` collection
 * adds two more stream layers per request, which costs about a third of the client's CPU time per
 * call (bench/llm.js) — and offline runs make many calls at once.
 * @throws UsageError when a model's API has no implementation
 */
export function buildModels(entries: RuntimeModel[]): ModelClient {
  const prepared = new Map(entries.map((e) => [`${e.model.provider}/${e.model.id}`, { entry: e, streams: streamsFor(e) }] as const));
  return {
    streamSimple(model, context, options) {
      const found = prepared.get(`${model.provider}/${model.id}`);
      if (!found) throw new Error(`model ${model.provider}/${model.id} was not prepared`);
      const { auth } = found.entry;
      const { send, ...rest } = options ?? {};
      const requestModel = auth.baseUrl ? { ...model, baseUrl: auth.baseUrl } : model;
      const env = auth.env || rest.env ? { ...auth.env, ...rest.env } : undefined;
      const viaShared = SHARED_FETCH_APIS.has(model.api);
      const fetch = rest.fetch ?? (viaShared ? (send ? slottedFetch(shared(), send.slots, send.onSend) : shared()) : undefined);
      return found.streams.streamSimple(requestModel, normalizeContext(context), {
        ...rest,
        ...(fetch ? { fetch } : {}),
        apiKey: rest.apiKey ?? auth.apiKey,
        headers: mergeHeaders(auth.headers, model.headers, rest.headers),
        ...(env ? { env } : {}),
      });
    },
    queuesAtSend: (model) => SHARED_FETCH_APIS.has(model.api),
  };
}
