/**
 * Protected tool calls (docs/design.md "Protected tools & paths"; docs/design.md §6 step 2): a
 * call is protected when its tool name is in `protectedTools` or its string `args.path` matches a
 * `protectedPaths` glob. Globs use picomatch with the seed's contract: full-path match, `\` read
 * as `/`, `*` and `?` within a segment, `**` across segments, `**\/` also matching zero folders,
 * case-sensitive, every other character literal (no braces, brackets or extglobs).
 */
import picomatch from "picomatch";
import type { PruneConfig } from "../config/config.js";

export type ProtectionTest = (toolName: string, args: unknown) => boolean;

/** Escape the characters picomatch would treat specially, other than `*` and `?`. */
function literalize(glob: string): string {
  return glob.replace(/\\/g, "/").replace(/[[\]{}()!+@]/g, (ch) => `\\${ch}`);
}

/** Compile one glob to a matcher over `/`-separated paths. */
export function compileGlob(glob: string): (path: string) => boolean {
  return picomatch(literalize(glob), {
    dot: true,
    nocase: false,
    noextglob: true,
    nobrace: true,
    nonegate: true,
    posix: true,
    strictSlashes: false,
  });
}

/** Build the protection test for a configuration. */
export function protectionTest(config: Pick<PruneConfig, "protectedTools" | "protectedPaths">): ProtectionTest {
  const tools = new Set(config.protectedTools);
  const matchers = config.protectedPaths.map(compileGlob);
  return (toolName, args) => {
    if (tools.has(toolName)) return true;
    const path = (args as { path?: unknown } | null | undefined)?.path;
    if (typeof path !== "string" || matchers.length === 0) return false;
    const normalized = path.replace(/\\/g, "/");
    return matchers.some((m) => m(normalized));
  };
}
