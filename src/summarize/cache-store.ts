/**
 * Where model-written summaries are kept between runs, and the files that keep them: one small JSON
 * file per answer, named by its content key, under the platform's cache folder —
 * `$CONDENSE_CACHE_DIR` when set (tests, relocation), else
 * - Linux and other Unix: `$XDG_CACHE_HOME/condense` (an absolute path), else `~/.cache/condense`;
 * - macOS: `~/Library/Caches/condense`;
 * - Windows: `%LOCALAPPDATA%\condense\Cache`, else `~\AppData\Local\condense\Cache`.
 *
 * `--no-cache` or `CONDENSE_CACHE=off` turns it off. Entries are written atomically (temporary file, rename), so concurrent runs never read half an
 * entry; two runs storing the same key write the same answer. The cache is a convenience: a folder
 * that cannot be read or written never fails a run (the caller is told once and goes on without it).
 */
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { writeFileAtomic } from "../session/sidecars.js";
import { readRegularFileSync } from "../util/files.js";

/**
 * The cache folder for this platform (see the module comment).
 * @param env environment (`CONDENSE_CACHE_DIR`, `XDG_CACHE_HOME`, `LOCALAPPDATA`)
 */
export function cacheFolder(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform, home: string = homedir()): string {
  if (env.CONDENSE_CACHE_DIR) return env.CONDENSE_CACHE_DIR;
  if (platform === "darwin") return join(home, "Library", "Caches", "condense");
  if (platform === "win32") return join(env.LOCALAPPDATA || join(home, "AppData", "Local"), "condense", "Cache");
  // XDG: a relative value is invalid and must be ignored.
  const xdg = env.XDG_CACHE_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(home, ".cache"), "condense");
}

/**
 * The store a run uses: none when `enabled` is false (`--no-cache`) or `CONDENSE_CACHE=off`, else
 * the platform's folder.
 */
export function summaryStore(enabled: boolean, env: NodeJS.ProcessEnv = process.env): SummaryStore | null {
  if (!enabled || env.CONDENSE_CACHE === "off") return null;
  return new SummaryStore(cacheFolder(env));
}

/** One stored answer. */
export interface CachedAnswer {
  /** The model's answer, as the summarizer returned it (labels, not refs). */
  text: string;
  /** `provider/id` that answered. */
  model: string;
  /** ISO time it was stored. */
  storedAt: string;
}

/** Format of the entry files; a change of layout or key recipe gets a new folder. */
const LAYOUT = "summaries-v1";

/** Answers by content key, in files under `folder`. */
export class SummaryStore {
  constructor(readonly folder: string) {}

  /** The file of `key` (64 hex): `<folder>/summaries-v1/<first 2>/<key>.json`. */
  pathOf(key: string): string {
    return join(this.folder, LAYOUT, key.slice(0, 2), `${key}.json`);
  }

  /**
   * The stored answer, or null when there is none (or it cannot be read or is not an answer). Read
   * without waiting: a FIFO or device under the key's name is no answer (a small file, read at once).
   */
  async get(key: string): Promise<CachedAnswer | null> {
    let text: string;
    try {
      text = readRegularFileSync(this.pathOf(key), "utf8");
    } catch {
      return null;
    }
    try {
      const value = JSON.parse(text) as CachedAnswer;
      return typeof value?.text === "string" && value.text.trim() !== "" && typeof value.model === "string" ? value : null;
    } catch {
      return null;
    }
  }

  /** Store an answer. @throws NodeJS.ErrnoException when the folder cannot be written */
  async put(key: string, answer: CachedAnswer): Promise<void> {
    await writeFileAtomic(this.pathOf(key), `${JSON.stringify(answer)}\n`);
  }
}
