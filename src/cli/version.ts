/**
 * The package version, read from the package.json two folders above this module (the package root,
 * both from `src/cli/` and from the compiled `dist/cli/`), so `condense --version` always matches
 * the installed package.
 */
import { readFileSync } from "node:fs";

/** `version` of condense's package.json, e.g. `"0.1.0"`. @throws when package.json is unreadable */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}
