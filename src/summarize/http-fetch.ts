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
 * A web stream over a Node stream, lighter than `Readable.toWeb`: chunks are passed on as they
 * come, and the Node stream is paused while the reader has a chunk queued and not taken.
 */
function webBody(source: Readable): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        let settled = false;
        const settle = (how: () => void) => {
          if (settled) return;
          settled = true;
          how();
        };
        source.on("data", (chunk: Buffer) => {
          if (settled) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 1) <= 0) source.pause();
        });
        source.once("end", () => settle(() => controller.close()));
        source.once("error", (error) => settle(() => controller.error(error)));
        // Destroyed without an error (the connection went away): the reader must not wait forever.
        source.once("close", () => settle(() => controller.error(new TypeError("terminated"))));
      },
      pull() {
        source.resume();
      },
      cancel() {
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
        resolve(responseOf(res));
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
