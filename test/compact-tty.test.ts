/**
 * `condense compact --model` in a real terminal (tmux): while the model is answering, a spinner on
 * stderr says which model is summarizing; Ctrl-C stops the request, exits 130 and leaves the
 * session untouched (no entry, no lock left behind).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli } from "./built-cli.js";
import { copyInto, FIXTURES } from "./helpers.js";
import { startFakeLlmServer } from "./fake-llm-server.mjs";
import { hasTmux, tmux, waitFor } from "./tty-support.js";

describe.skipIf(!hasTmux)("compact in a terminal", () => {
  let server: Awaited<ReturnType<typeof startFakeLlmServer>>;
  let cli: ReturnType<typeof buildCli>;
  let dir: string;
  const sessionName = `condense-compact-tty-${process.pid}`;
  beforeAll(async () => {
    server = await startFakeLlmServer();
    cli = buildCli("compact-tty");
    dir = mkdtempSync(path.join(tmpdir(), "condense-compact-tty-"));
  }, 120_000);
  afterAll(async () => {
    tmux("kill-session", "-t", sessionName);
    await server?.close();
    cli?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("shows the model at work; Ctrl-C exits 130 and writes nothing", async () => {
    server.setPlan(() => ({ stall: true }));
    writeFileSync(
      path.join(dir, "models.json"),
      JSON.stringify({ providers: { oai: { baseUrl: server.openaiBaseUrl, api: "openai-completions", apiKey: "k", models: [{ id: "gpt-local" }] } } }),
    );
    const file = copyInto(dir, path.join(FIXTURES, "example-session.jsonl"));
    const before = readFileSync(file);
    // A shell that ignores Ctrl-C itself runs the CLI and records its exit status.
    const rc = path.join(dir, "rc");
    const cmd = `env PI_CODING_AGENT_DIR=${dir} ${process.execPath} ${cli.bin} compact ${file} --model oai/gpt-local --keep-recent-tokens 400`;
    const script = `trap '' INT; ${cmd}; echo EXIT=$? > ${rc}; sleep 60`;
    expect(tmux("new-session", "-d", "-s", sessionName, "-x", "120", "-y", "20", "sh", "-c", script).status).toBe(0);
    const screen = () => tmux("capture-pane", "-p", "-J", "-S", "-100", "-t", sessionName).stdout;
    await waitFor("the spinner", () => screen().includes("summarizing with oai/gpt-local"));
    await waitFor("the request", () => server.requests.length > 0);
    tmux("send-keys", "-t", sessionName, "C-c");
    await waitFor("the exit status", () => existsSync(rc) && readFileSync(rc, "utf8").includes("EXIT=")).catch((e) => {
      throw new Error(`${e.message}; screen:\n${screen()}`);
    });
    expect(readFileSync(rc, "utf8").trim()).toBe("EXIT=130");
    expect(screen()).toContain("interrupted; nothing was written");
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });
});
