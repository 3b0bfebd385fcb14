/**
 * Pi's settings as Pi merges them (src/config/pi-settings.ts), checked against Pi 1.6's own
 * SettingsManager and project-trust decision (run under Node 22), and the pi-condense switch as
 * the extension itself reads it.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { piCondenseStatus, readPiSettings } from "../src/config/pi-settings.js";
import { agentDir } from "../src/session/locate.js";
import { makeTempDir } from "./helpers.js";
import { oracleAvailable, runSettingsHarness, type PiSettingsResult } from "./extension-oracle/client.js";

const json = (file: string, value: unknown, prefix = "") => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, prefix + JSON.stringify(value, null, 2));
};

interface Case {
  name: string;
  cwd: string;
  agentDir: string;
  /** Expected: project settings read, and the merged settings. */
  projectLoaded: boolean;
  merged: Record<string, unknown>;
  errors: string[];
}

describe("readPiSettings: Pi's global settings with the project's merged over them", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  const cases: Case[] = [];
  let pi: PiSettingsResult[] = [];

  beforeAll(async () => {
    tmp = makeTempDir("pi-settings");
    const setup = (name: string, files: { global?: unknown; project?: unknown; trust?: unknown; globalRaw?: string; projectRaw?: string }) => {
      const root = path.join(tmp.dir, name);
      const agentDir = path.join(root, "agent");
      const cwd = path.join(root, "work", "repo");
      mkdirSync(agentDir, { recursive: true });
      mkdirSync(cwd, { recursive: true });
      if (files.global !== undefined) json(path.join(agentDir, "settings.json"), files.global);
      if (files.globalRaw !== undefined) writeFileSync(path.join(agentDir, "settings.json"), files.globalRaw);
      if (files.project !== undefined) json(path.join(cwd, ".pi", "settings.json"), files.project);
      if (files.projectRaw !== undefined) {
        mkdirSync(path.join(cwd, ".pi"), { recursive: true });
        writeFileSync(path.join(cwd, ".pi", "settings.json"), files.projectRaw);
      }
      if (files.trust !== undefined)
        json(path.join(agentDir, "trust.json"), typeof files.trust === "function" ? (files.trust as (r: string) => unknown)(root) : files.trust);
      return { root, agentDir, cwd };
    };
    const global = {
      theme: "dark",
      compaction: { enabled: true, reserveTokens: 16384 },
      defaultTools: ["read", "bash"],
      skills: ["~/skills"],
      contextPrune: { enabled: true },
    };
    const project = { compaction: { keepRecentTokens: 8000 }, defaultTools: ["+grep", "-bash"], skills: ["./skills"], theme: "light" };
    const deep = {
      theme: "light",
      compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 8000 },
      defaultTools: ["read", "bash", "+grep", "-bash"],
      skills: ["./skills"],
      contextPrune: { enabled: true },
    };

    let c = setup("nothing", {});
    cases.push({ name: "no settings files at all", ...c, projectLoaded: false, merged: {}, errors: [] });
    c = setup("global-only", { global });
    cases.push({ name: "global settings only", ...c, projectLoaded: false, merged: global, errors: [] });
    c = setup("trusted", { global, project, trust: (root: string) => ({ [path.join(root, "work", "repo")]: true }) });
    cases.push({
      name: "a project trusted in trust.json: deep merge, arrays replaced, +/- defaultTools appended",
      ...c,
      projectLoaded: true,
      merged: deep,
      errors: [],
    });
    c = setup("trusted-parent", { global, project, trust: (root: string) => ({ [path.join(root, "work")]: true }) });
    cases.push({ name: "a trusted parent folder trusts the project", ...c, projectLoaded: true, merged: deep, errors: [] });
    c = setup("nearest-wins", { global, project, trust: (root: string) => ({ [path.join(root, "work")]: true, [path.join(root, "work", "repo")]: false }) });
    cases.push({ name: "the nearest decision wins: the project itself is not trusted", ...c, projectLoaded: false, merged: global, errors: [] });
    c = setup("undecided", { global, project });
    cases.push({ name: "no trust decision: Pi without a terminal does not trust", ...c, projectLoaded: false, merged: global, errors: [] });
    c = setup("always", { global: { ...global, defaultProjectTrust: "always" }, project });
    cases.push({ name: 'defaultProjectTrust "always"', ...c, projectLoaded: true, merged: { ...deep, defaultProjectTrust: "always" }, errors: [] });
    c = setup("never", { global: { ...global, defaultProjectTrust: "never" }, project, trust: {} });
    cases.push({ name: 'defaultProjectTrust "never"', ...c, projectLoaded: false, merged: { ...global, defaultProjectTrust: "never" }, errors: [] });
    c = setup("bom-and-empty", {
      globalRaw: `\uFEFF${JSON.stringify(global)}`,
      projectRaw: "",
      trust: (root: string) => ({ [path.join(root, "work", "repo")]: true }),
    });
    cases.push({ name: "a BOM is skipped and an empty file is {}", ...c, projectLoaded: true, merged: global, errors: [] });
    c = setup("broken-project", { global, projectRaw: "{ not json", trust: (root: string) => ({ [path.join(root, "work", "repo")]: true }) });
    cases.push({
      name: "a project file that is not JSON is an error and counts as {}",
      ...c,
      projectLoaded: false,
      merged: global,
      errors: [path.join(c.cwd, ".pi", "settings.json")],
    });

    pi = oracleAvailable() ? await runSettingsHarness(cases.map(({ cwd, agentDir }) => ({ cwd, agentDir }))) : [];
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  it("reads each case as expected", () => {
    for (const k of cases) {
      const s = readPiSettings({ cwd: k.cwd, agentDir: k.agentDir });
      expect(s.globalPath, k.name).toBe(path.join(k.agentDir, "settings.json"));
      expect(s.projectPath, k.name).toBe(path.join(k.cwd, ".pi", "settings.json"));
      expect(s.merged, k.name).toStrictEqual(k.merged);
      expect(s.projectLoaded, k.name).toBe(k.projectLoaded);
      expect(
        s.errors.map((e) => e.path),
        k.name,
      ).toEqual(k.errors);
    }
    const broken = readPiSettings({ cwd: cases.at(-1)!.cwd, agentDir: cases.at(-1)!.agentDir });
    expect(broken.errors[0].message).toMatch(/^not valid JSON: /);
  });

  it.skipIf(!oracleAvailable())("equals Pi 1.6's own SettingsManager and trust decision (no terminal) in every case", () => {
    expect(pi.length).toBe(cases.length);
    cases.forEach((k, i) => {
      const ours = readPiSettings({ cwd: k.cwd, agentDir: k.agentDir });
      expect(ours.merged, k.name).toStrictEqual(pi[i].merged);
      // Pi trusts a folder without project files by default; project settings are read only when
      // the file exists, the project is trusted, and the file could be used.
      const piLoaded = pi[i].trusted && existsSync(ours.projectPath) && !pi[i].errorPaths.includes(ours.projectPath);
      expect(ours.projectLoaded, k.name).toBe(piLoaded);
      expect(
        ours.errors.map((e) => e.path),
        k.name,
      ).toEqual(pi[i].errorPaths);
    });
  });

  it("finds the agent folder as Pi does: $PI_CODING_AGENT_DIR with ~ expanded, else ~/.pi/agent", () => {
    expect(agentDir({})).toBe(path.join(homedir(), ".pi", "agent"));
    expect(agentDir({ PI_CODING_AGENT_DIR: "~/presets/work" })).toBe(path.join(homedir(), "presets", "work"));
    expect(agentDir({ PI_CODING_AGENT_DIR: "/opt/pi" })).toBe("/opt/pi");
  });
});

describe("piCondenseStatus: installed and switched on, as the extension reads its switch", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  beforeAll(() => (tmp = makeTempDir("pi-condense-status")));
  afterAll(() => tmp?.cleanup());

  const folder = (name: string) => {
    const agentDir = path.join(tmp.dir, name, "agent");
    const cwd = path.join(tmp.dir, name, "repo");
    mkdirSync(agentDir, { recursive: true });
    mkdirSync(cwd, { recursive: true });
    return { agentDir, cwd, settings: path.join(agentDir, "settings.json") };
  };

  it("is on only with contextPrune.enabled === true in the global settings.json", () => {
    const f = folder("on");
    json(f.settings, { packages: ["npm:pi-condense"], contextPrune: { enabled: true } });
    expect(piCondenseStatus(f)).toEqual({ enabled: true, installedAs: "npm:pi-condense in the global packages", settingsPath: f.settings });
  });

  it("says why it is off", () => {
    let f = folder("missing");
    expect(piCondenseStatus(f)).toEqual({ enabled: false, installedAs: null, settingsPath: f.settings, reason: `${f.settings} does not exist` });
    f = folder("no-block");
    json(f.settings, { packages: ["npm:pi-condense@2.9.1"] });
    expect(piCondenseStatus(f)).toMatchObject({
      enabled: false,
      installedAs: "npm:pi-condense@2.9.1 in the global packages",
      reason: `${f.settings} has no "contextPrune" object`,
    });
    f = folder("string-true");
    json(f.settings, { contextPrune: { enabled: "true" } });
    expect(piCondenseStatus(f).reason).toBe(`"contextPrune.enabled" is "true" in ${f.settings}`);
    f = folder("unset");
    json(f.settings, { contextPrune: { summarizerModel: "anthropic/claude-haiku-4-5" } });
    expect(piCondenseStatus(f).reason).toBe(`"contextPrune.enabled" is not set in ${f.settings}`);
  });

  it("a BOM that Pi skips still switches the extension off: it parses settings.json with a plain JSON.parse", () => {
    const f = folder("bom");
    json(f.settings, { contextPrune: { enabled: true } }, "\uFEFF");
    expect(readPiSettings(f).merged).toEqual({ contextPrune: { enabled: true } });
    const status = piCondenseStatus(f);
    expect(status.enabled).toBe(false);
    expect(status.reason).toMatch(new RegExp(`^${f.settings.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} cannot be read by the extension \\(`));
  });

  it("project settings never switch it on, but a trusted project can install it", () => {
    const f = folder("project");
    json(f.settings, {});
    json(path.join(f.agentDir, "trust.json"), { [f.cwd]: true });
    json(path.join(f.cwd, ".pi", "settings.json"), { packages: [{ source: "npm:pi-condense" }], contextPrune: { enabled: true } });
    expect(readPiSettings(f).merged).toEqual({ packages: [{ source: "npm:pi-condense" }], contextPrune: { enabled: true } });
    expect(piCondenseStatus(f)).toEqual({
      enabled: false,
      installedAs: "npm:pi-condense in the project packages",
      settingsPath: f.settings,
      reason: `${f.settings} has no "contextPrune" object`,
    });
  });

  it("finds a checkout in the agent's extensions folder or named in `extensions`", () => {
    let f = folder("ext-folder");
    json(path.join(f.agentDir, "extensions", "condense-ext", "package.json"), { name: "pi-condense" });
    expect(piCondenseStatus(f).installedAs).toBe(path.join(f.agentDir, "extensions", "condense-ext"));
    f = folder("ext-setting");
    json(path.join(tmp.dir, "checkout", "package.json"), { name: "pi-condense" });
    json(f.settings, { extensions: [path.join(tmp.dir, "checkout", "index.ts")], contextPrune: { enabled: true } });
    writeFileSync(path.join(tmp.dir, "checkout", "index.ts"), "");
    expect(piCondenseStatus(f).installedAs).toBe(`${path.join(tmp.dir, "checkout", "index.ts")} in the global extensions`);
  });
});
