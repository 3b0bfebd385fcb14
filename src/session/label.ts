/**
 * How a person knows a session (Pi's session list, pi-coding-agent `SessionManager.listSessions`):
 * its id, the day it started, and its name — the latest `session_info` name in the file (an empty
 * name clears it) — or else its first user message.
 */
import { oneLine, stripControl } from "../util/text.js";
import type { Session } from "./session.js";
import type { SessionEntry } from "./types.js";

export interface SessionLabel {
  /** The session id (header), "" without a header. */
  id: string;
  /** Its first 8 characters (a UUID's first group). */
  shortId: string;
  /** `YYYY-MM-DD` of the header timestamp, "" when it has none. */
  date: string;
  /** The session's name, else its first user message on one line, without control characters; "" for neither. */
  title: string;
}

function textOfMessage(message: { content?: unknown }): string {
  const c = message.content;
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return "";
  return c
    .filter((b) => b?.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join(" ");
}

/** The latest `session_info` name (trimmed; an empty one clears), else undefined. */
function sessionName(entries: SessionEntry[]): string | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e.type === "session_info") return typeof e.name === "string" && e.name.trim() !== "" ? e.name.trim() : undefined;
  }
  return undefined;
}

/** The first user message of the file with text, as Pi's session list shows it. */
function firstPrompt(entries: SessionEntry[]): string {
  for (const e of entries) {
    if (e.type !== "message" || e.message?.role !== "user") continue;
    const text = textOfMessage(e.message);
    if (text.trim() !== "") return text;
  }
  return "";
}

/** The label of a loaded session. */
export function sessionLabel(session: Pick<Session, "id" | "header" | "entries">): SessionLabel {
  const stamp = typeof session.header?.timestamp === "string" ? session.header.timestamp : "";
  const date = /^\d{4}-\d{2}-\d{2}/.exec(stamp)?.[0] ?? "";
  const title = oneLine(stripControl(sessionName(session.entries) ?? firstPrompt(session.entries)));
  return { id: session.id, shortId: session.id.slice(0, 8), date, title };
}

/**
 * `019dcd91 2026-04-27 fix the login flow` (the parts that exist).
 * @param name what stands in for the short id when it is missing or not unique (a file name)
 */
export function formatLabel(label: SessionLabel, name?: string): string {
  return [name ?? label.shortId, label.date, label.title].filter((p) => p !== "").join(" ");
}
