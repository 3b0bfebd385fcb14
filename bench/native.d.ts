/** Types of bench/native.js, for the test that checks the README's figures against it. */
export interface NativeRow {
  session: string;
  calls: number;
  before: number;
  piAlone: number;
  extension: number;
  edits: number;
  ms: number;
  error?: string;
}
export const MANY_CALLS: number;
export function benchNative(load?: (path: string) => Promise<any>): Promise<NativeRow[]>;
export function formatNativeRows(rows: NativeRow[]): string[];
export function nativeSummary(rows: NativeRow[]): string;
