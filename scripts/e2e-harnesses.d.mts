export interface Harness {
  readonly id: 'claude' | 'codex' | 'gemini' | 'copilot' | 'opencode' | 'cline';
  readonly name: string;
  readonly pkg: string;
  readonly version: string;
  readonly bin: string;
}
export const HARNESSES: readonly Harness[];
export function cacheRoot(): string;
export function installDir(h: Harness): string;
export function binaryPath(h: Harness): string;
