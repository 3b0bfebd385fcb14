/**
 * The summarizer's shared HTTP client (src/summarize/http-fetch.ts) keeps `fetch`'s contract for
 * what the provider SDKs send: status, headers and body come back as sent; a compressed answer is
 * decoded; a streamed answer arrives chunk by chunk; an abort rejects with the signal's reason and
 * ends a body being read; an unreachable host is a TypeError; connections are reused. Through send
 * slots, no more requests are on the wire than there are slots, each holding its slot until its
 * answer has been read or dropped.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keepAliveFetch, slottedFetch } from "../src/summarize/http-fetch.js";
import { SendSlots } from "../src/summarize/slots.js";

let server: Server;
let base = "";
const sockets = new Set<unknown>();
const received: { method?: string; headers: IncomingMessage["headers"]; body: string }[] = [];
const pairs: (() => void)[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    sockets.add(req.socket);
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ method: req.method, headers: req.headers, body });
      if (req.url === "/pair") {
        // answers come in pairs: both in the same turn, once the second has arrived
        pairs.push(() => res.end(`pair ${body}`));
        if (pairs.length === 2) for (const answer of pairs.splice(0)) answer();
      } else if (req.url === "/gzip") {
        res.writeHead(200, { "content-encoding": "gzip", "content-type": "application/json" });
        res.end(gzipSync(JSON.stringify({ ok: true, echo: body })));
      } else if (req.url === "/stream") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: one\n\n");
        setTimeout(() => res.end("data: two\n\n"), 20);
      } else if (req.url === "/stall") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: first\n\n");
      } else if (req.url === "/redirect") {
        res.writeHead(307, { location: "/gzip" });
        res.end();
      } else {
        res.writeHead(429, { "x-custom": "yes", "retry-after": "1" });
        res.end("slow down");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("keepAliveFetch", () => {
  const fetch = keepAliveFetch();

  it("sends method, headers and body; returns status, headers and body", async () => {
    const res = await fetch(`${base}/other`, { method: "POST", headers: { "Content-Type": "application/json", "X-Api-Key": "k" }, body: '{"a":1}' });
    expect(res.status).toBe(429);
    expect(res.headers.get("x-custom")).toBe("yes");
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await res.text()).toBe("slow down");
    const last = received[received.length - 1];
    expect(last).toMatchObject({ method: "POST", body: '{"a":1}' });
    expect(last.headers["x-api-key"]).toBe("k");
    expect(last.headers["content-type"]).toBe("application/json");
  });

  it("decodes a gzip answer", async () => {
    const res = await fetch(`${base}/gzip`, { method: "POST", body: new TextEncoder().encode("bytes") });
    expect(await res.json()).toEqual({ ok: true, echo: "bytes" });
  });

  it("hands a streamed answer over chunk by chunk", async () => {
    const res = await fetch(`${base}/stream`);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("data: one\n\n");
    const second = await reader.read();
    expect(new TextDecoder().decode(second.value)).toBe("data: two\n\n");
    expect((await reader.read()).done).toBe(true);
  });

  it("follows a redirect through the built-in fetch", async () => {
    const res = await fetch(`${base}/redirect`, { method: "POST", body: "x" });
    expect(await res.json()).toEqual({ ok: true, echo: "x" });
  });

  it("rejects with the signal's reason, before and while the body is read", async () => {
    const before = new AbortController();
    before.abort(new Error("stop now"));
    await expect(fetch(`${base}/gzip`, { signal: before.signal })).rejects.toThrow("stop now");
    const during = new AbortController();
    const res = await fetch(`${base}/stall`, { signal: during.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: first\n\n");
    setTimeout(() => during.abort(new Error("user pressed Ctrl-C")), 10);
    await expect(reader.read()).rejects.toThrow("user pressed Ctrl-C");
  });

  it("fails an unreachable host with a TypeError, as fetch does", async () => {
    await expect(fetch("http://127.0.0.1:1/x")).rejects.toBeInstanceOf(TypeError);
  });

  it("reuses its connections across calls", async () => {
    sockets.clear();
    for (let i = 0; i < 5; i++) await (await fetch(`${base}/gzip`, { method: "POST", body: String(i) })).json();
    expect(sockets.size).toBe(1);
  });
});

describe("SendSlots", () => {
  it("hands slots out in the order they were asked for, each given back once", async () => {
    const slots = new SendSlots(1);
    const first = await slots.acquire();
    const order: string[] = [];
    const granted = (name: string) => (release: (() => void) | null) => {
      order.push(name);
      return release;
    };
    const second = slots.acquire().then(granted("second"));
    const third = slots.acquire().then(granted("third"));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(order).toEqual([]);
    first?.();
    first?.(); // a second call gives nothing back: the third still waits
    const secondRelease = await second;
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(order).toEqual(["second"]);
    secondRelease?.();
    (await third)?.();
    expect(order).toEqual(["second", "third"]);
  });

  it("answers null to a request aborted while it waits, which then takes no slot", async () => {
    const slots = new SendSlots(1);
    const held = await slots.acquire();
    const controller = new AbortController();
    const waiting = slots.acquire(controller.signal);
    const next = slots.acquire();
    controller.abort();
    expect(await waiting).toBeNull();
    held?.();
    expect(typeof (await next)).toBe("function");
  });
});

describe("slottedFetch", () => {
  it("sends no more requests than it has slots; a slot frees when its answer is dropped", async () => {
    const fetch = slottedFetch(keepAliveFetch(), new SendSlots(1));
    const stalled = await fetch(`${base}/stall`);
    const next = fetch(`${base}/gzip`, { method: "POST", body: "waited" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received.some((r) => r.body === "waited")).toBe(false);
    await (stalled.body as ReadableStream<Uint8Array>).cancel();
    expect(await (await next).json()).toEqual({ ok: true, echo: "waited" });
    // read to its end, an answer frees its slot too
    expect(await (await fetch(`${base}/gzip`, { method: "POST", body: "after" })).json()).toEqual({ ok: true, echo: "after" });
  });

  it("sends the requests waiting for slots as soon as the answers holding them have arrived, before any of those answers is handed over", async () => {
    const slots = new SendSlots(2);
    const order: string[] = [];
    const fetch = slottedFetch(keepAliveFetch(), slots, () => order.push("sent"));
    const ask = (name: string) =>
      fetch(`${base}/pair`, { method: "POST", body: name }).then(async (res) => {
        order.push(`${name} handed over`);
        return res.text();
      });
    // a and b are answered in the same turn of the server; c and d wait for their slots
    const answers = await Promise.all(["a", "b", "c", "d"].map(ask));
    expect(answers).toEqual(["pair a", "pair b", "pair c", "pair d"]);
    expect(order.slice(0, 6)).toEqual(["sent", "sent", "sent", "sent", "a handed over", "b handed over"]);
  });

  it("rejects a request aborted while it waits for its slot with the signal's reason, and says when one is sent", async () => {
    const slots = new SendSlots(1);
    const sent: number[] = [];
    const fetch = slottedFetch(keepAliveFetch(), slots, () => sent.push(sent.length));
    const held = await slots.acquire();
    const controller = new AbortController();
    const waiting = fetch(`${base}/gzip`, { method: "POST", body: "never", signal: controller.signal });
    controller.abort(new Error("user pressed Ctrl-C"));
    await expect(waiting).rejects.toThrow("user pressed Ctrl-C");
    expect(sent).toEqual([]);
    held?.();
    expect(await (await fetch(`${base}/gzip`, { method: "POST", body: "sent" })).json()).toEqual({ ok: true, echo: "sent" });
    expect(sent).toEqual([0]);
    expect(received.some((r) => r.body === "never")).toBe(false);
  });
});
