/**
 * Model resolution and credentials for the LLM summarizer: `provider/id` references, the
 * session's own model (against Pi's own `buildSessionContext`), pi-ai's catalog with models.json
 * on top, and API keys from auth.json / models.json / the environment as Pi reads them.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { loadSession } from "../src/session/session.js";
import type { SessionEntry } from "../src/session/types.js";
import { readAuthFile, resolveConfigValue, resolveProviderAuth } from "../src/summarize/credentials.js";
import { createModelSummarizer, loadModelSetup, prepareModel } from "../src/summarize/llm-setup.js";
import { parseModelRef, sessionModelRef } from "../src/summarize/model-resolve.js";
import { readModelsFile, stripJsonComments } from "../src/summarize/models-config.js";
import { createSummarizer } from "../src/summarize/select.js";
import { UsageError } from "../src/util/errors.js";

const SESSIONS = path.resolve(__dirname, "../../shared/sessions");
const FIXTURE = path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "condense-llm-models-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PI_CODING_AGENT_DIR: dir, ...extra });
const writeJson = (name: string, value: unknown) => writeFileSync(path.join(dir, name), JSON.stringify(value, null, 2));

async function usageMessage(promise: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof promise === "function" ? promise() : promise);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error("expected a UsageError");
}

describe("model references", () => {
  it("split at the first slash", () => {
    expect(parseModelRef("anthropic/claude-haiku-4-5")).toEqual({ provider: "anthropic", id: "claude-haiku-4-5" });
    expect(parseModelRef("openrouter/anthropic/claude-sonnet-4.5")).toEqual({ provider: "openrouter", id: "anthropic/claude-sonnet-4.5" });
  });

  it("refuse anything else with the expected shape", async () => {
    expect(await usageMessage(() => parseModelRef("claude"))).toBe('--model "claude": expected provider/model-id, e.g. anthropic/claude-haiku-4-5');
    expect(await usageMessage(() => parseModelRef("/x", "--fallback-model"))).toContain("--fallback-model");
  });
});

describe("the session's own model", () => {
  it("is what Pi's buildSessionContext picks, on every shared session", async () => {
    const url = pathToFileURL(path.resolve(__dirname, "../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js")).href;
    const pi = await import(/* @vite-ignore */ url);
    let compared = 0;
    for (const name of readdirSync(SESSIONS).filter((f) => f.endsWith(".jsonl"))) {
      const session = await loadSession(path.join(SESSIONS, name));
      const piModel = pi.buildSessionContext(session.entries, session.leaf?.id ?? null, session.byId).model;
      const ours = sessionModelRef(session.branch);
      if (piModel && typeof piModel.provider === "string") {
        expect(ours, name).toEqual({ provider: piModel.provider, id: piModel.modelId });
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(10);
  });

  it("reads a fork's single `model` field, ignoring non-default roles", () => {
    const e = (extra: Record<string, unknown>) => ({ id: "x", parentId: null, timestamp: "t", ...extra }) as SessionEntry;
    expect(sessionModelRef([e({ type: "model_change", model: "zai/glm-5.2", role: "default" })])).toEqual({ provider: "zai", id: "glm-5.2" });
    expect(sessionModelRef([e({ type: "model_change", model: "openrouter/~anthropic/claude-x" })])).toEqual({
      provider: "openrouter",
      id: "~anthropic/claude-x",
    });
    expect(sessionModelRef([e({ type: "model_change", model: "zai/glm-5.2" }), e({ type: "model_change", model: "zai/glm-small", role: "smol" })])).toEqual({
      provider: "zai",
      id: "glm-5.2",
    });
    expect(sessionModelRef([])).toBeNull();
  });
});

describe("the model catalog", () => {
  it("knows pi-ai's built-in models", async () => {
    const setup = loadModelSetup(env({ ANTHROPIC_API_KEY: "sk-test" }));
    const { model, auth } = await prepareModel(setup, parseModelRef("anthropic/claude-haiku-4-5"), "--model");
    expect(model).toMatchObject({ provider: "anthropic", id: "claude-haiku-4-5", api: "anthropic-messages", baseUrl: "https://api.anthropic.com" });
    expect(auth).toEqual({ apiKey: "sk-test", source: "ANTHROPIC_API_KEY" });
  });

  it("says how to find valid ids for an unknown model or provider", async () => {
    const setup = loadModelSetup(env());
    expect(await usageMessage(() => setup.catalog.resolve(parseModelRef("anthropic/claude-haiku"), "--model"))).toBe(
      '--model anthropic/claude-haiku: unknown model "claude-haiku" for provider "anthropic" (similar ids: claude-haiku-4-5, claude-haiku-4-5-20251001, claude-haiku-5-5). ' +
        "List valid ids with `pi --list-models anthropic` or at https://pi.dev/models; add a model of your own under providers.anthropic.models in models.json.",
    );
    const msg = await usageMessage(() => setup.catalog.resolve(parseModelRef("acme/m1"), "summarizerModel"));
    expect(msg).toMatch(/^summarizerModel acme\/m1: unknown provider "acme"\. Known providers: amazon-bedrock, ant-ling, anthropic, /);
    expect(msg).toContain(`A provider of your own (e.g. a local OpenAI-compatible server) goes in $PI_CODING_AGENT_DIR/models.json.`);
  });

  it("adds models.json providers and models, with Pi's comments, defaults and overrides", () => {
    writeFileSync(
      path.join(dir, "models.json"),
      `{
  // a local server
  "providers": {
    "local": {
      "baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions", "apiKey": "none",
      "models": [{ "id": "qwen-7b", "cost": { "input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0 } }, { "id": "big", "contextWindow": 32000, },],
      "modelOverrides": { "big": { "maxTokens": 4096 } }
    },
    "anthropic": { "baseUrl": "https://proxy.example/v1" }
  }
}`,
    );
    const setup = loadModelSetup(env());
    expect(setup.catalog.resolve(parseModelRef("local/qwen-7b"), "--model")).toEqual({
      id: "qwen-7b",
      name: "qwen-7b",
      api: "openai-completions",
      provider: "local",
      baseUrl: "http://127.0.0.1:8080/v1",
      reasoning: false,
      input: ["text"],
      cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 128000,
      maxTokens: 16384,
    });
    expect(setup.catalog.resolve(parseModelRef("local/big"), "--model")).toMatchObject({ contextWindow: 32000, maxTokens: 4096 });
    expect(setup.catalog.resolve(parseModelRef("anthropic/claude-haiku-4-5"), "--model")).toMatchObject({
      baseUrl: "https://proxy.example/v1",
      api: "anthropic-messages",
    });
  });

  it("finds ids only Pi's cached newer catalog (models-store.json) knows", () => {
    writeJson("models-store.json", {
      anthropic: {
        models: [
          {
            id: "claude-next",
            name: "Claude Next",
            api: "anthropic-messages",
            provider: "anthropic",
            baseUrl: "https://api.anthropic.com",
            reasoning: true,
            input: ["text"],
            cost: { input: 1, output: 5, cacheRead: 0, cacheWrite: 0 },
            contextWindow: 200000,
            maxTokens: 64000,
          },
        ],
      },
    });
    expect(loadModelSetup(env()).catalog.resolve(parseModelRef("anthropic/claude-next"), "--model")).toMatchObject({
      id: "claude-next",
      contextWindow: 200000,
    });
  });

  it("refuses unusable models.json entries, naming file and field", async () => {
    writeJson("models.json", { providers: { local: { models: [{ id: "m" }] } } });
    const setup = loadModelSetup(env());
    expect(await usageMessage(() => setup.catalog.resolve(parseModelRef("local/m"), "--model"))).toBe(
      `${path.join(dir, "models.json")}: provider local, model m: no "api" (set it on the provider or the model, e.g. "openai-completions")`,
    );
    writeJson("models.json", { providers: { local: { baseUrl: 7 } } });
    expect(await usageMessage(() => loadModelSetup(env()))).toBe(`${path.join(dir, "models.json")}: providers.local.baseUrl: expected a non-empty string`);
    writeFileSync(path.join(dir, "models.json"), "{ nope");
    expect(await usageMessage(() => loadModelSetup(env()))).toMatch(/models\.json: not valid JSON: /);
  });

  it("strips comments and trailing commas outside strings only", () => {
    expect(stripJsonComments('{"a": "http://x//y", // c\n "b": [1,2,],}')).toBe('{"a": "http://x//y", \n "b": [1,2]}');
    expect(readModelsFile(path.join(dir, "absent.json"))).toBeNull();
  });
});

describe("credentials", () => {
  const AUTH = () => path.join(dir, "auth.json");

  it("resolve literal, $NAME, ${NAME} and escapes like Pi", () => {
    const ctx = { description: "key", env: { A: "alpha", B: "beta" } };
    expect(resolveConfigValue("sk-literal", ctx)).toBe("sk-literal");
    expect(resolveConfigValue("$A", ctx)).toBe("alpha");
    expect(resolveConfigValue("${A}-$B!", ctx)).toBe("alpha-beta!");
    expect(resolveConfigValue("$$A $!x", ctx)).toBe("$A !x");
    expect(resolveConfigValue("!printf ' from-command \\n'", ctx)).toBe("from-command");
  });

  it("name the missing variable or the failing command", async () => {
    expect(await usageMessage(() => resolveConfigValue("$NOPE_KEY", { description: 'API key for provider "x"', env: {} }))).toBe(
      'API key for provider "x": environment variable NOPE_KEY is not set',
    );
    expect(await usageMessage(() => resolveConfigValue("!true", { description: "k", env: {} }))).toBe("k: the command `true` printed nothing");
  });

  it("take auth.json first, then models.json, then the environment", async () => {
    const inputs = { provider: "anthropic", authPath: AUTH(), env: { ANTHROPIC_API_KEY: "from-env", STORED: "from-auth-json" } };
    const builtin = loadModelSetup(env()).catalog.builtin("anthropic");
    const configured = { apiKey: "from-models-json", path: "models.json" };
    expect(await resolveProviderAuth({ ...inputs, builtin, stored: { anthropic: { type: "api_key", key: "$STORED" } }, configured })).toEqual({
      apiKey: "from-auth-json",
      source: AUTH(),
    });
    expect(await resolveProviderAuth({ ...inputs, builtin, stored: {}, configured })).toEqual({ apiKey: "from-models-json", source: "models.json" });
    expect(await resolveProviderAuth({ ...inputs, builtin, stored: {} })).toEqual({ apiKey: "from-env", source: "ANTHROPIC_API_KEY" });
  });

  it("reads auth.json with a literal key, a $NAME reference or a !command", async () => {
    writeJson("auth.json", {
      openai: { type: "api_key", key: "sk-literal" },
      groq: { type: "api_key", key: "$MY_GROQ" },
      mistral: { type: "api_key", key: "!echo sk-from-command" },
    });
    const setup = loadModelSetup(env({ MY_GROQ: "gsk-env" }));
    const keyOf = async (ref: string) => (await prepareModel(setup, parseModelRef(ref), "--model")).auth.apiKey;
    const first = (p: string) => setup.catalog.models(p)[0].id;
    expect(await keyOf(`openai/${first("openai")}`)).toBe("sk-literal");
    expect(await keyOf(`groq/${first("groq")}`)).toBe("gsk-env");
    expect(await keyOf(`mistral/${first("mistral")}`)).toBe("sk-from-command");
  });

  it("a missing key names the environment variables pi-ai looks for", async () => {
    const setup = loadModelSetup(env());
    expect(await usageMessage(prepareModel(setup, parseModelRef("openai/gpt-4o-mini"), "--model"))).toBe(
      `--model openai/gpt-4o-mini: no API key for provider "openai": set OPENAI_API_KEY, store a key in ${AUTH()} as {"openai": {"type": "api_key", "key": "..."}}, ` +
        `or give the provider an "apiKey" in models.json (a local server that needs no key still needs a placeholder such as "none")`,
    );
    expect(await usageMessage(prepareModel(setup, parseModelRef("anthropic/claude-haiku-4-5"), "--model"))).toContain(
      "set one of ANTHROPIC_AUTH_TOKEN, ANTHROPIC_OAUTH_TOKEN, ANTHROPIC_API_KEY,",
    );
  });

  it("refuses OAuth-only credentials with a message to use an API key, and uses a key when one exists", async () => {
    writeJson("auth.json", { anthropic: { type: "oauth", access: "a", refresh: "r", expires: 1 } });
    const ref = parseModelRef("anthropic/claude-haiku-4-5");
    expect(await usageMessage(prepareModel(loadModelSetup(env()), ref, "--model"))).toMatch(
      new RegExp(
        `^--model anthropic/claude-haiku-4-5: provider "anthropic" is signed in with OAuth in ${AUTH().replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}; condense cannot refresh OAuth tokens\\. Use an API key instead: set one of ANTHROPIC_AUTH_TOKEN`,
      ),
    );
    expect((await prepareModel(loadModelSetup(env({ ANTHROPIC_API_KEY: "sk-env" })), ref, "--model")).auth.apiKey).toBe("sk-env");
  });

  it("resolves models.json keys and headers, and sends the key as a bearer header when asked", async () => {
    writeJson("models.json", {
      providers: {
        local: {
          baseUrl: "http://127.0.0.1:1/v1",
          api: "openai-completions",
          apiKey: "${LOCAL_KEY}",
          authHeader: true,
          headers: { "X-Team": "$TEAM" },
          models: [{ id: "m", headers: { "X-Model": "fixed" } }],
        },
      },
    });
    const prepared = await prepareModel(loadModelSetup(env({ LOCAL_KEY: "k1", TEAM: "core" })), parseModelRef("local/m"), "--model");
    expect(prepared.auth).toEqual({ apiKey: "k1", headers: { "X-Team": "core", Authorization: "Bearer k1" }, source: path.join(dir, "models.json") });
    expect(prepared.model.headers).toEqual({ "X-Model": "fixed" });
    expect(await usageMessage(prepareModel(loadModelSetup(env({ LOCAL_KEY: "k1" })), parseModelRef("local/m"), "--model"))).toBe(
      `--model local/m: provider "local" in ${path.join(dir, "models.json")} header "X-Team": environment variable TEAM is not set`,
    );
  });

  it("refuses a malformed auth.json", async () => {
    writeJson("auth.json", { openai: { type: "password", key: 1 } });
    expect(await usageMessage(() => readAuthFile(AUTH()))).toBe(`${AUTH()}: the credential for provider "openai" is not an api_key or oauth entry`);
    expect(readAuthFile(path.join(dir, "absent.json"))).toEqual({});
  });
});

describe("choosing the summarizer", () => {
  it("is deterministic unless a model is named", async () => {
    const session = await loadSession(FIXTURE);
    expect((await createSummarizer({}, defaultConfig(), session, { env: env() })).name).toBe("deterministic");
    expect((await createSummarizer({ kind: "deterministic", model: "openai/x" }, defaultConfig(), session, { env: env() })).name).toBe("deterministic");
  });

  it("--summarizer llm with summarizerModel default uses the session's model", async () => {
    const session = await loadSession(FIXTURE);
    const s = await createSummarizer({ kind: "llm" }, defaultConfig(), session, { env: env({ ANTHROPIC_API_KEY: "k" }) });
    expect(s).toMatchObject({ name: "anthropic/claude-sonnet-4-5", local: false });
  });

  it("a concrete summarizerModel needs no flag; --model wins over it", async () => {
    const session = await loadSession(FIXTURE);
    const config = { ...defaultConfig(), summarizerModel: "anthropic/claude-haiku-4-5" };
    const e = env({ ANTHROPIC_API_KEY: "k", OPENAI_API_KEY: "k" });
    expect((await createSummarizer({}, config, session, { env: e })).name).toBe("anthropic/claude-haiku-4-5");
    expect((await createSummarizer({ model: "openai/gpt-4o-mini" }, config, session, { env: e })).name).toBe("openai/gpt-4o-mini");
  });

  it("a session without a model and no --model is a usage error", async () => {
    writeFileSync(path.join(dir, "s.jsonl"), '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n');
    const session = await loadSession(path.join(dir, "s.jsonl"));
    expect(await usageMessage(createModelSummarizer({ kind: "llm" }, defaultConfig(), session, { env: env() }))).toBe(
      `${path.join(dir, "s.jsonl")}: the session records no model to summarize with (summarizerModel is "default"); name one with --model provider/id`,
    );
  });

  it("an unusable --fallback-model is a usage error; an unusable session model just means no fallback", async () => {
    const session = await loadSession(FIXTURE);
    const e = env({ OPENAI_API_KEY: "k" });
    // the session's anthropic model has no key here: no fallback, no error
    expect((await createSummarizer({ model: "openai/gpt-4o-mini" }, defaultConfig(), session, { env: e })).name).toBe("openai/gpt-4o-mini");
    expect(
      await usageMessage(createSummarizer({ model: "openai/gpt-4o-mini", fallbackModel: "anthropic/claude-haiku-4-5" }, defaultConfig(), session, { env: e })),
    ).toMatch(/^--fallback-model anthropic\/claude-haiku-4-5: no API key for provider "anthropic": /);
  });

  it("with --summarizer llm and no model named, a missing key says the provider is the session's own model's", async () => {
    const session = await loadSession(FIXTURE);
    expect(await usageMessage(createSummarizer({ kind: "llm" }, defaultConfig(), session, { env: env() }))).toMatch(
      /^the session's model anthropic\/[\w.-]+ \(with summarizerModel "default" the summarizer uses the model the session ran on; name another with --model provider\/id\): no API key for provider "anthropic": /,
    );
  });
});
