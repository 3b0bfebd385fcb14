/**
 * `npm install` in the checkout runs no install script it was not told about (README "Other ways to
 * install"): every package of the lockfile that has one is named in package.json's `allowScripts`,
 * so npm (11.19+) lists none as "not yet covered"; only the `node` dev dependency's runs.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers.js";

const read = (name: string) => JSON.parse(readFileSync(path.join(REPO_ROOT, name), "utf8"));

describe("install scripts", () => {
  it("allowScripts decides every install script of the lockfile: node allowed, @google/genai, esbuild and protobufjs denied", () => {
    const lock = read("package-lock.json") as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript)
      .map(([where]) => where.slice(where.lastIndexOf("node_modules/") + "node_modules/".length))
      .sort();
    expect(read("package.json").allowScripts).toEqual(Object.fromEntries(withScripts.map((name) => [name, name === "node"])));
    expect(withScripts).toEqual(["@google/genai", "esbuild", "node", "protobufjs"]);
  });
});
