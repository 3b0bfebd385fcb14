// Generated inputs for the bench (never committed): big sessions built by repeating the real turns
// of the shared sessions, and an archive of many sessions in Pi's folder layout.
//
// A generated session repeats the entries of the shared v3 sessions that have no compaction
// (compaction entries would cut the context) with, per copy, fresh entry ids, every timestamp
// moved past the previous copy and tool-call ids suffixed with the copy number, so the copies are
// distinct turns of one long linear branch (no occurrence key repeats).
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, writeSync } from "node:fs";
import path from "node:path";

/** Shared v3 sessions without compaction entries (the sources of the generated turns), largest first. */
export function turnSources(sharedDir) {
  return readdirSync(sharedDir)
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => path.join(sharedDir, f))
    .map((p) => ({ p, lines: readFileSync(p, "utf8").split("\n") }))
    .filter(({ lines }) => {
      try {
        const h = JSON.parse(lines[0]);
        return h.type === "session" && h.version === 3 && !lines.some((l) => l.includes('"type":"compaction"'));
      } catch {
        return false;
      }
    })
    .map(({ p, lines }) => ({ p, entries: parseEntries(lines) }))
    .filter((s) => s.entries.length >= 50)
    .sort((a, b) => b.entries.length - a.entries.length);
}

function parseEntries(lines) {
  const out = [];
  for (const line of lines.slice(1)) {
    if (line.trim() === "") continue;
    try {
      const e = JSON.parse(line);
      if (e && typeof e === "object" && typeof e.id === "string" && e.type !== "session") out.push(e);
    } catch {
      // skipped, as the reader skips it
    }
  }
  return out;
}

const DAY_MS = 24 * 3600 * 1000;

/** One copy of `entries`: ids fresh, parents rewired, timestamps moved by `shiftMs`, tool-call ids suffixed. */
function copyEntries(entries, fresh, lastId, shiftMs, suffix) {
  const map = new Map(entries.map((e) => [e.id, fresh()]));
  const shiftIso = (iso) => (typeof iso === "string" && !Number.isNaN(Date.parse(iso)) ? new Date(Date.parse(iso) + shiftMs).toISOString() : iso);
  const lines = [];
  let parent = lastId;
  for (const e of entries) {
    const copy = { ...e, id: map.get(e.id), parentId: parent, timestamp: shiftIso(e.timestamp) };
    parent = copy.id;
    if (typeof e.targetId === "string") copy.targetId = map.get(e.targetId) ?? e.targetId;
    if (e.type === "message" && e.message && typeof e.message === "object") copy.message = copyMessage(e.message, shiftMs, suffix);
    lines.push(JSON.stringify(copy));
  }
  return { text: `${lines.join("\n")}\n`, lastId: parent };
}

function copyMessage(m, shiftMs, suffix) {
  const out = { ...m };
  if (typeof m.timestamp === "number") out.timestamp = m.timestamp + shiftMs;
  if (typeof m.toolCallId === "string") out.toolCallId = `${m.toolCallId}${suffix}`;
  if (Array.isArray(m.content))
    out.content = m.content.map((b) => (b && b.type === "toolCall" && typeof b.id === "string" ? { ...b, id: `${b.id}${suffix}` } : b));
  return out;
}

/**
 * Write a session of about `targetBytes` to `dest` (Pi's v3 layout, one linear branch): the turns
 * of `sources` in rotation, each copy shifted one day after the previous one.
 * @param options.copies write exactly this many copies instead (targetBytes is then ignored)
 * @returns bytes written, copies made, entries written
 */
export function buildSession(sources, dest, targetBytes, { sessionId = "0199c0de-0000-7000-8000-00000000be01", copies: exactly } = {}) {
  let counter = 0x10000000;
  const fresh = () => (counter++).toString(16);
  const fd = openSync(dest, "w");
  let written = 0;
  let entries = 0;
  let copies = 0;
  let lastId = null;
  try {
    const header = { type: "session", version: 3, id: sessionId, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/bench/project" };
    written += writeSync(fd, `${JSON.stringify(header)}\n`);
    while (exactly === undefined ? written < targetBytes : copies < exactly) {
      const source = sources[copies % sources.length];
      const copy = copyEntries(source.entries, fresh, lastId, copies * DAY_MS, `-c${copies}`);
      written += writeSync(fd, copy.text);
      lastId = copy.lastId;
      entries += source.entries.length;
      copies++;
    }
  } finally {
    closeSync(fd);
  }
  return { bytes: written, copies, entries };
}

/**
 * An archive of `files` sessions in Pi's folder layout (`<root>/--<cwd>--/<timestamp>_<id>.jsonl`,
 * a few project folders): copies of the shared sessions (every one, readable or not, in rotation)
 * with fresh session ids in their headers.
 * @returns the root folder's byte total and the files written
 */
export function buildArchive(sharedDir, root, files) {
  const sources = readdirSync(sharedDir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()
    .map((f) => readFileSync(path.join(sharedDir, f), "utf8"));
  const projects = ["--home-dev-app--", "--home-dev-lib--", "--srv-work-api--", "--home-dev-docs--", "--tmp-scratch--"];
  let bytes = 0;
  const written = [];
  for (let i = 0; i < files; i++) {
    const folder = path.join(root, projects[i % projects.length]);
    mkdirSync(folder, { recursive: true });
    const id = `0199c0de-${String(i).padStart(4, "0")}-7000-8000-${String(i).padStart(12, "0")}`;
    const text = withSessionId(sources[i % sources.length], id);
    const stamp = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString().replace(/[:.]/g, "-");
    const file = path.join(folder, `${stamp}_${id}.jsonl`);
    const fd = openSync(file, "w");
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    bytes += Buffer.byteLength(text);
    written.push(file);
  }
  return { bytes, files: written };
}

/** The file's text with the header's id replaced (files without a parseable header stay as they are). */
function withSessionId(text, id) {
  const nl = text.indexOf("\n");
  try {
    const header = JSON.parse(nl < 0 ? text : text.slice(0, nl));
    if (header?.type !== "session") return text;
    return `${JSON.stringify({ ...header, id })}${nl < 0 ? "" : text.slice(nl)}`;
  } catch {
    return text;
  }
}
