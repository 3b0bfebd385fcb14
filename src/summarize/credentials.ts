/**
 * API keys the way Pi 1.6 finds them, so a provider that works in Pi works in condense unchanged
 * (Pi's docs/models.md "Authenticate"): a stored credential in `$PI_CODING_AGENT_DIR/auth.json`
 * first, then the provider's `apiKey` in `models.json`, then the environment variables pi-ai looks
 * for. Values in auth.json and models.json are a literal, a `$NAME` / `${NAME}` environment
 * reference (`$$` and `$!` give a literal `$` and `!`), or `!command` whose standard output is the
 * value. OAuth credentials need a refresh flow condense does not run: they are refused with a
 * message saying to use an API key, unless an API key is also available from models.json or the
 * environment.
 *
 * Everything here is resolved once, before the first call; nothing is written back.
 */
import { execSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import type { AuthContext, AuthResult, Provider, ProviderEnv } from "@earendil-works/pi-ai";
import { readRegularFileSync } from "../util/files.js";
import { errnoWords, UsageError } from "../util/errors.js";

/** One provider's entry in auth.json. */
export type StoredCredential =
  | { type: "api_key"; key?: string; env?: Record<string, string> }
  | { type: "oauth"; access: string; refresh: string; expires: number; [key: string]: unknown };

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * Read auth.json. A missing file is an empty store.
 * @throws UsageError when the file is unreadable, not JSON, or an entry has the wrong shape
 */
export function readAuthFile(path: string): Record<string, StoredCredential> {
  let text: string;
  try {
    text = readRegularFileSync(path, "utf8"); // a FIFO is refused, not waited on
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new UsageError(`${path}: cannot read: ${errnoWords(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripBom(text));
  } catch (error) {
    throw new UsageError(`${path}: not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new UsageError(`${path}: expected a JSON object of credentials by provider`);
  for (const [provider, value] of Object.entries(parsed)) {
    const v = value as Record<string, unknown> | null;
    const ok =
      typeof v === "object" &&
      v !== null &&
      ((v.type === "api_key" &&
        (v.key === undefined || typeof v.key === "string") &&
        (v.env === undefined || (typeof v.env === "object" && v.env !== null && Object.values(v.env).every((s) => typeof s === "string")))) ||
        (v.type === "oauth" && typeof v.access === "string" && typeof v.refresh === "string" && typeof v.expires === "number"));
    if (!ok) throw new UsageError(`${path}: the credential for provider ${JSON.stringify(provider)} is not an api_key or oauth entry`);
  }
  return parsed as Record<string, StoredCredential>;
}

type Part = { env: string } | { text: string };

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

/** Split a template value into literal text and `$NAME` / `${NAME}` references. */
function parseTemplate(value: string): Part[] {
  const parts: Part[] = [];
  const text = (t: string) => {
    const last = parts[parts.length - 1];
    if (last && "text" in last) last.text += t;
    else if (t !== "") parts.push({ text: t });
  };
  let i = 0;
  while (i < value.length) {
    const dollar = value.indexOf("$", i);
    if (dollar < 0) {
      text(value.slice(i));
      break;
    }
    text(value.slice(i, dollar));
    const next = value[dollar + 1];
    if (next === "$" || next === "!") {
      text(next);
      i = dollar + 2;
    } else if (next === "{") {
      const end = value.indexOf("}", dollar + 2);
      const name = end < 0 ? "" : value.slice(dollar + 2, end);
      if (end >= 0 && NAME.exec(name)?.[0] === name) {
        parts.push({ env: name });
        i = end + 1;
      } else if (end >= 0) {
        text(value.slice(dollar, end + 1));
        i = end + 1;
      } else {
        text("$");
        i = dollar + 1;
      }
    } else {
      const m = NAME.exec(value.slice(dollar + 1));
      if (m) {
        parts.push({ env: m[0] });
        i = dollar + 1 + m[0].length;
      } else {
        text("$");
        i = dollar + 1;
      }
    }
  }
  return parts;
}

/** Environment variables a value refers to (none for a literal or a `!command`). */
export function referencedEnvNames(value: string): string[] {
  if (value.startsWith("!")) return [];
  return [...new Set(parseTemplate(value).flatMap((p) => ("env" in p ? [p.env] : [])))];
}

/** Where a resolved value came from, for messages. */
export interface ValueContext {
  /** e.g. `API key for provider "local" in /home/u/.pi/agent/models.json`. */
  description: string;
  env: NodeJS.ProcessEnv;
  /** Extra variables that win over `env` (auth.json `env` of an api_key entry). */
  scoped?: Record<string, string>;
}

/** `!command` outputs, run once per process (a run over many sessions asks once). */
const commandOutputs = new Map<string, string>();

/**
 * Resolve a configuration value: `!command` → its trimmed standard output (run once per process);
 * otherwise the template with `$NAME` references replaced.
 * @throws UsageError naming the missing variables, or the command that failed or printed nothing
 */
export function resolveConfigValue(value: string, context: ValueContext): string {
  if (value.startsWith("!")) {
    const command = value.slice(1);
    const cached = commandOutputs.get(command);
    if (cached !== undefined) return cached;
    let output: string;
    try {
      output = execSync(command, { encoding: "utf8", timeout: 10_000, stdio: ["ignore", "pipe", "ignore"] }).trim();
    } catch (error) {
      throw new UsageError(`${context.description}: the command \`${command}\` failed: ${(error as Error).message.split("\n")[0]}`);
    }
    if (output === "") throw new UsageError(`${context.description}: the command \`${command}\` printed nothing`);
    commandOutputs.set(command, output);
    return output;
  }
  const lookup = (name: string) => context.scoped?.[name] || context.env[name] || undefined;
  const parts = parseTemplate(value);
  const missing = parts.flatMap((p) => ("env" in p && lookup(p.env) === undefined ? [p.env] : []));
  if (missing.length > 0) {
    throw new UsageError(
      `${context.description}: environment variable${missing.length > 1 ? "s" : ""} ${missing.join(", ")} ${missing.length > 1 ? "are" : "is"} not set`,
    );
  }
  return parts.map((p) => ("env" in p ? (lookup(p.env) ?? "") : p.text)).join("");
}

/** Resolve every header value like an API key. */
export function resolveHeaderValues(headers: Record<string, string> | undefined, context: ValueContext): Record<string, string> | undefined {
  if (!headers) return undefined;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = resolveConfigValue(value, { ...context, description: `${context.description} header ${JSON.stringify(name)}` });
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** What a request to one provider authenticates with (pi-ai's `AuthResult`). */
export interface ResolvedAuth {
  apiKey?: string;
  headers?: Record<string, string>;
  baseUrl?: string;
  /** Provider-scoped settings some providers read (e.g. account ids). */
  env?: ProviderEnv;
  /** For messages: auth.json, models.json, an environment variable name, … */
  source: string;
}

export interface AuthInputs {
  provider: string;
  /** auth.json contents and path. */
  stored: Record<string, StoredCredential>;
  authPath: string;
  /** The provider's models.json `apiKey`, `headers` and `authHeader`, with the file's path. */
  configured?: { apiKey?: string; headers?: Record<string, string>; authHeader?: boolean; path: string };
  /** pi-ai's built-in provider of this id: its own auth reads the environment variables it knows. */
  builtin?: Provider;
  env: NodeJS.ProcessEnv;
}

/** An auth context over `env` that records every variable the provider asks for. */
function recordingContext(env: NodeJS.ProcessEnv, asked: string[]): AuthContext {
  return {
    env: async (name) => {
      if (!asked.includes(name)) asked.push(name);
      return env[name] || undefined;
    },
    fileExists: async (path) => existsSync(path.startsWith("~") ? homedir() + path.slice(1) : path),
  };
}

/**
 * Find the credentials for a provider, in Pi's order: a stored api_key credential in auth.json,
 * else the provider's models.json `apiKey`, else what the built-in provider finds by itself
 * (its environment variables, ambient cloud credentials). A key found in a file still goes
 * through the built-in provider's own auth, as in Pi, so provider-specific handling is kept.
 * @throws UsageError when nothing provides credentials: names the environment variables the
 *   provider looked for, auth.json and models.json; or says to use an API key when only an OAuth
 *   credential is stored
 */
export async function resolveProviderAuth(input: AuthInputs): Promise<ResolvedAuth> {
  const { provider, configured, env, builtin } = input;
  const stored = input.stored[provider];
  const where = configured ? ` in ${configured.path}` : "";
  const asked: string[] = [];
  const ctx = recordingContext(env, asked);
  const signal = new AbortController().signal;
  const viaProvider = async (key: string | undefined, scoped?: Record<string, string>): Promise<AuthResult | undefined> => {
    const apiKeyAuth = builtin?.auth.apiKey;
    if (!apiKeyAuth) return key ? { auth: { apiKey: key } } : undefined;
    return apiKeyAuth.resolve({ ctx, credential: { type: "api_key", ...(key !== undefined ? { key } : {}), ...(scoped ? { env: scoped } : {}) }, signal });
  };

  let result: AuthResult | undefined;
  let source = "";
  let scoped: Record<string, string> | undefined;
  if (stored?.type === "api_key") {
    scoped = stored.env;
    const key = stored.key
      ? resolveConfigValue(stored.key, { description: `API key for provider "${provider}" in ${input.authPath}`, env, scoped })
      : undefined;
    result = await viaProvider(key, scoped);
    source = input.authPath;
  } else if (configured?.apiKey !== undefined) {
    const key = resolveConfigValue(configured.apiKey, { description: `API key for provider "${provider}"${where}`, env });
    result = await viaProvider(key);
    source = configured.path;
  } else if (builtin?.auth.apiKey) {
    result = await builtin.auth.apiKey.resolve({ ctx, signal });
    source = result?.source ?? "the environment";
  }

  if (!result) {
    if (stored?.type === "oauth") {
      throw new UsageError(
        `provider "${provider}" is signed in with OAuth in ${input.authPath}; condense cannot refresh OAuth tokens. ` +
          `Use an API key instead: ${await keyHint(input)}`,
      );
    }
    throw new UsageError(`no API key for provider "${provider}": ${await keyHint(input)}`);
  }
  const headers = resolveHeaderValues(configured?.headers, { description: `provider "${provider}"${where}`, env, scoped: { ...scoped, ...result.env } });
  const merged = { ...(result.auth.headers as Record<string, string> | undefined), ...headers };
  if (configured?.authHeader) {
    if (!result.auth.apiKey) throw new UsageError(`provider "${provider}"${where}: "authHeader" needs an API key`);
    merged.Authorization = `Bearer ${result.auth.apiKey}`;
  }
  return {
    ...(result.auth.apiKey !== undefined ? { apiKey: result.auth.apiKey } : {}),
    ...(Object.keys(merged).length > 0 ? { headers: merged } : {}),
    ...(result.auth.baseUrl ? { baseUrl: result.auth.baseUrl } : {}),
    ...(result.env ? { env: result.env } : {}),
    source,
  };
}

/**
 * The environment variables a built-in provider reads its key from, in its order: its own auth is
 * asked to resolve against an empty environment, and every variable it looks up is noted.
 */
export async function providerEnvKeyNames(builtin: Provider | undefined): Promise<string[]> {
  const apiKeyAuth = builtin?.auth.apiKey;
  if (!apiKeyAuth) return [];
  const asked: string[] = [];
  try {
    await apiKeyAuth.resolve({ ctx: recordingContext({}, asked), signal: new AbortController().signal });
  } catch {
    // a provider that fails without credentials still told us what it looked for
  }
  const keys = asked.filter((name) => /(?:_KEY|_TOKEN)$/.test(name));
  return keys.length > 0 ? keys : asked;
}

async function keyHint(input: AuthInputs): Promise<string> {
  const names = await providerEnvKeyNames(input.builtin);
  const options: string[] = [];
  if (names.length > 0) options.push(`set ${names.length > 1 ? `one of ${names.join(", ")}` : names[0]}`);
  options.push(`store a key in ${input.authPath} as {"${input.provider}": {"type": "api_key", "key": "..."}}`);
  options.push(`or give the provider an "apiKey" in models.json (a local server that needs no key still needs a placeholder such as "none")`);
  return options.join(", ");
}
