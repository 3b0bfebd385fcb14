/**
 * The pi-ai `Models` collection the summarizer's requests go through, holding only the providers
 * of the models condense resolved, each with the credentials resolved up front (credentials.ts).
 * A model whose API its built-in provider speaks is streamed by that provider (so provider-specific
 * behaviour is kept); a custom model is streamed by pi-ai's implementation of its `api`.
 */
import { createModels, type Api, type Model, type Models, type Provider, type ProviderStreams } from "@earendil-works/pi-ai";
import { anthropicMessagesApi } from "@earendil-works/pi-ai/api/anthropic-messages.lazy";
import { azureOpenAIResponsesApi } from "@earendil-works/pi-ai/api/azure-openai-responses.lazy";
import { bedrockConverseStreamApi } from "@earendil-works/pi-ai/api/bedrock-converse-stream.lazy";
import { googleGenerativeAIApi } from "@earendil-works/pi-ai/api/google-generative-ai.lazy";
import { googleVertexApi } from "@earendil-works/pi-ai/api/google-vertex.lazy";
import { mistralConversationsApi } from "@earendil-works/pi-ai/api/mistral-conversations.lazy";
import { openAICodexResponsesApi } from "@earendil-works/pi-ai/api/openai-codex-responses.lazy";
import { openAICompletionsApi } from "@earendil-works/pi-ai/api/openai-completions.lazy";
import { openAIResponsesApi } from "@earendil-works/pi-ai/api/openai-responses.lazy";
import { piMessagesApi } from "@earendil-works/pi-ai/api/pi-messages.lazy";
import { UsageError } from "../util/errors.js";
import type { ResolvedAuth } from "./credentials.js";

const API_IMPLEMENTATIONS: Record<string, () => ProviderStreams> = {
  "anthropic-messages": anthropicMessagesApi,
  "azure-openai-responses": azureOpenAIResponsesApi,
  "bedrock-converse-stream": bedrockConverseStreamApi,
  "google-generative-ai": googleGenerativeAIApi,
  "google-vertex": googleVertexApi,
  "mistral-conversations": mistralConversationsApi,
  "openai-codex-responses": openAICodexResponsesApi,
  "openai-completions": openAICompletionsApi,
  "openai-responses": openAIResponsesApi,
  "pi-messages": piMessagesApi,
};

/** APIs condense can call, for messages. */
export const KNOWN_APIS = Object.keys(API_IMPLEMENTATIONS);

/** One model to make reachable: the model, its credentials and pi-ai's built-in provider if any. */
export interface RuntimeModel {
  model: Model<Api>;
  auth: ResolvedAuth;
  builtin?: Provider;
}

function streamsFor(entry: RuntimeModel): ProviderStreams {
  const base = entry.builtin;
  if (base && base.getModels().some((m) => m.api === entry.model.api)) return base;
  const make = API_IMPLEMENTATIONS[entry.model.api];
  if (!make) {
    throw new UsageError(
      `model ${entry.model.provider}/${entry.model.id}: condense cannot call the API "${entry.model.api}"; supported: ${KNOWN_APIS.join(", ")}`,
    );
  }
  return make();
}

/**
 * A `Models` collection with one provider per distinct provider id in `entries`.
 * @throws UsageError when a model's API has no implementation
 */
export function buildModels(entries: RuntimeModel[]): Models {
  const models = createModels();
  const byProvider = new Map<string, RuntimeModel[]>();
  for (const entry of entries) {
    const list = byProvider.get(entry.model.provider) ?? [];
    list.push(entry);
    byProvider.set(entry.model.provider, list);
  }
  for (const [id, list] of byProvider) {
    const streams = new Map(list.map((e) => [e.model.id, streamsFor(e)] as const));
    const auth = list[0].auth;
    const pick = (model: Model<Api>): ProviderStreams => {
      const s = streams.get(model.id);
      if (!s) throw new Error(`model ${model.provider}/${model.id} was not prepared`);
      return s;
    };
    const provider: Provider = {
      id,
      name: list[0].builtin?.name ?? id,
      baseUrl: list[0].model.baseUrl,
      auth: {
        apiKey: {
          name: "condense",
          resolve: async () => ({
            auth: {
              ...(auth.apiKey !== undefined ? { apiKey: auth.apiKey } : {}),
              ...(auth.headers ? { headers: auth.headers } : {}),
              ...(auth.baseUrl ? { baseUrl: auth.baseUrl } : {}),
            },
            ...(auth.env ? { env: auth.env } : {}),
            source: auth.source,
          }),
        },
      },
      getModels: () => list.map((e) => e.model),
      stream: (model, context, options) => pick(model).stream(model, context, options),
      streamSimple: (model, context, options) => pick(model).streamSimple(model, context, options),
    };
    models.setProvider(provider);
  }
  return models;
}
