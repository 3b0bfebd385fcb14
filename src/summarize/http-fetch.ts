/**
 * The HTTP client the summarizer's requests go through (issue 18, "the model path"): one
 * `fetch`-compatible function over `node:http`/`node:https` with keep-alive agents, shared by every
 * call of a run, handed to pi-ai's provider clients (`options.fetch`). Compared with Node's built-in
 * fetch it writes a request in one piece instead of through a web stream (fewer writes and
 * allocations per call) and reuses its connections across calls; offline runs make many calls at
 * once, so its CPU time per call decides how close to the server's latency a run gets.
 *
 * Only what the provider SDKs use is taken over: http(s) URLs with a string or byte body (or none);
 * anything else goes to the built-in fetch. Compressed answers (gzip, deflate, br) are decoded.
 */
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Readable, Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import type { SendSlots } from "./slots.js";

type Fetch = typeof globalThis.fetch;

/** Decoders for the content encodings an answer may come in. */
const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  "x-gzip": createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/** The request headers as a plain object (the SDKs pass a `Headers` or a record). */
function headerRecord(headers: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  const list = headers instanceof Headers ? [...headers.entries()] : Array.isArray(headers) ? headers : Object.entries(headers);
  for (const [name, value] of list) if (value !== undefined && value !== null) out[name.toLowerCase()] = String(value);
  return out;
}

/** A `Response` over an incoming message (decoded when compressed). */
function responseOf(res: IncomingMessage): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
  const status = res.statusCode ?? 0;
  const encoding = String(res.headers["content-encoding"] ?? "").toLowerCase();
  const decode = Object.hasOwn(DECODERS, encoding) ? DECODERS[encoding] : undefined;
  const source: Readable = decode ? res.pipe(decode()) : res;
  if (decode) res.on("error", (e) => source.destroy(e));
  const bodyless = status === 204 || status === 304 || status < 200;
  return new Response(bodyless ? null : webBody(source), { status, statusText: res.statusMessage, headers });
}

/**
 * Work handed to the readers of answers (a response, chunks of a body), one piece per turn of the
 * event loop, in the order it came: between two pieces the loop reads what else has arrived, so
 * an answer that arrives while others are parsed ends its exchange — and the request waiting for
 * its slot goes out — before the parsing goes on (see webBody).
 */
const handOvers: (() => void)[] = [];
let handOverHead = 0;

function handOverNext(): void {
  const next = handOvers[handOverHead++];
  if (handOverHead === handOvers.length) {
    handOvers.length = 0;
    handOverHead = 0;
  } else setImmediate(handOverNext);
  next();
}

/** Run `work` in a later turn of the event loop, after the work handed over before it (one piece per turn). */
function handOverLater(work: () => void): void {
  handOvers.push(work);
  if (handOvers.length - handOverHead === 1) setImmediate(handOverNext);
}

/** Bytes of an answer held for the reader before the connection is paused. */
const MAX_PENDING_BYTES = 1 << 20;

/**
 * A web stream over a Node stream, lighter than `Readable.toWeb`. The Node stream is read as its
 * data comes, so an answer that has arrived ends its exchange (and frees its send slot) at once;
 * what was read is handed to the reader in a later turn of the event loop, every chunk read since
 * then at once, followed by the end or the error. When many answers arrive together, every one of
 * them is read, and the request waiting for each freed slot sent, before any answer is parsed
 * (issue 18: 32 answers parsed one after another held the next 32 requests back by their whole
 * processing time). The Node stream is paused while the reader has chunks queued and not taken,
 * or when 1 MiB is waiting for the hand-over.
 */
function webBody(source: Readable): ReadableStream<Uint8Array> {
  // Set once the stream has ended (or been cancelled): nothing more is handed over.
  let over = false;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const pending: Uint8Array[] = [];
        let pendingBytes = 0;
        // How the stream ends (close or error), once the pending chunks have been handed over.
        let end: (() => void) | null = null;
        let scheduled = false;
        const handOver = () => {
          scheduled = false;
          if (over) return;
          for (const chunk of pending) controller.enqueue(chunk);
          pending.length = 0;
          pendingBytes = 0;
          if (end) {
            over = true;
            end();
          } else if ((controller.desiredSize ?? 1) <= 0) source.pause();
          else source.resume();
        };
        const later = () => {
          if (scheduled) return;
          scheduled = true;
          handOverLater(handOver);
        };
        const finish = (how: () => void) => {
          if (end) return;
          end = how;
          later();
        };
        source.on("data", (chunk: Buffer) => {
          if (end) return;
          pending.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          pendingBytes += chunk.byteLength;
          if (pendingBytes >= MAX_PENDING_BYTES) source.pause();
          later();
        });
        source.once("end", () => finish(() => controller.close()));
        source.once("error", (error) => finish(() => controller.error(error)));
        // Destroyed without an error (the connection went away): the reader must not wait forever.
        source.once("close", () => finish(() => controller.error(new TypeError("terminated"))));
      },
      pull() {
        source.resume();
      },
      cancel() {
        over = true;
        source.destroy();
      },
    },
    { highWaterMark: 1 },
  );
}

/**
 * A `fetch` that also says when an exchange is over: `settled` (optional third argument) is called
 * once, when the answer has been read to its end, the exchange failed or was aborted, or the body
 * was dropped (its connection destroyed).
 */
export type ExchangeFetch = (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1], settled?: () => void) => Promise<Response>;

/** `settled` wrapped to run once. */
function once(settled: (() => void) | undefined): () => void {
  let done = settled === undefined;
  return () => {
    if (done) return;
    done = true;
    settled?.();
  };
}

/**
 * A `fetch` for the provider clients: keep-alive connections, one write per request.
 * @returns a function with `fetch`'s contract (rejects with the signal's reason on abort, with a
 *   TypeError on a network error, as fetch does), and the `settled` callback of {@link ExchangeFetch}
 */
export function keepAliveFetch(): ExchangeFetch {
  const agents: Record<string, HttpAgent> = { "http:": new HttpAgent({ keepAlive: true }), "https:": new HttpsAgent({ keepAlive: true }) };
  // What the built-in fetch answers counts as settled once its headers are in (the provider SDKs
  // never take this path: they send string bodies to http(s) URLs that do not redirect).
  const fallback = (input: Parameters<Fetch>[0], init: Parameters<Fetch>[1], settled: () => void): Promise<Response> =>
    globalThis.fetch(input, init).finally(settled);
  return (input, init, onSettled) => {
    const settled = once(onSettled);
    const href = typeof input === "string" ? input : input instanceof URL ? input.href : undefined;
    const body = init?.body;
    const url = href === undefined ? undefined : new URL(href);
    const simpleBody = body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || !simpleBody || (init?.redirect && init.redirect !== "follow")) {
      return fallback(input, init, settled);
    }
    const signal = init?.signal ?? undefined;
    return new Promise<Response>((resolve, reject) => {
      if (signal?.aborted) {
        settled();
        return reject(abortError(signal));
      }
      let redirected = false;
      const send = url.protocol === "https:" ? httpsRequest : httpRequest;
      const req = send(url, { method: init?.method ?? "GET", headers: headerRecord(init?.headers), agent: agents[url.protocol] }, (res) => {
        // A redirect is followed by the built-in fetch (providers do not redirect API calls).
        if ((res.statusCode ?? 0) >= 300 && (res.statusCode ?? 0) < 400 && res.headers.location) {
          redirected = true;
          res.resume();
          resolve(fallback(new URL(res.headers.location, url).href, init, settled));
          return;
        }
        signal?.addEventListener("abort", () => res.destroy(abortError(signal) as Error), { once: true });
        // The answer is read from now on (its slot frees when it has arrived); whoever asked for it
        // gets it in a later turn, after the other answers that arrived with it (see webBody).
        const response = responseOf(res);
        handOverLater(() => resolve(response));
      });
      // The request closes when its answer has been read to the end, or when it fails or is destroyed.
      req.once("close", () => {
        if (!redirected) settled();
      });
      req.on("error", (error) => reject(signal?.aborted ? abortError(signal) : Object.assign(new TypeError("fetch failed"), { cause: error })));
      signal?.addEventListener("abort", () => req.destroy(abortError(signal) as Error), { once: true });
      req.end(body ?? undefined);
    });
  };
}

/**
 * A `fetch` whose requests each wait for one of `slots` before they are sent and hold it until
 * their exchange is over: whoever calls it can build requests ahead of time, and no more than the
 * slots are ever on the wire. `onSend` is called when a request has its slot, just before it is sent.
 * @returns rejects with the signal's reason when the request is aborted while it waits
 */
export function slottedFetch(fetch: ExchangeFetch, slots: SendSlots, onSend?: () => void): Fetch {
  return async (input, init) => {
    const signal = init?.signal ?? undefined;
    const release = await slots.acquire(signal);
    if (!release) throw signal ? abortError(signal) : new DOMException("This operation was aborted", "AbortError");
    onSend?.();
    try {
      return await fetch(input, init, release);
    } catch (error) {
      release();
      throw error;
    }
  };
}
