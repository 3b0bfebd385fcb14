// Types of generate.js (a plain JavaScript module shared by the bench and the linearity test).

/** A shared session whose turns a generated session repeats. */
export interface TurnSource {
  p: string;
  entries: Record<string, unknown>[];
}

export function turnSources(sharedDir: string): TurnSource[];

export function buildSession(
  sources: TurnSource[],
  dest: string,
  targetBytes: number,
  options?: { sessionId?: string; copies?: number },
): { bytes: number; copies: number; entries: number };

export function buildArchive(sharedDir: string, root: string, files: number): { bytes: number; files: string[] };
