/**
 * The harnesses other than Claude Code that have a pre-tool-use hook, by name: apart from their
 * adapters (harness-hooks.ts), so that the hook runtime tells a call's harness without loading them.
 */
export const HARNESSES = ['codex', 'gemini', 'cursor', 'opencode', 'copilot', 'cline'] as const;
export type HarnessName = (typeof HARNESSES)[number];

export function isHarness(name: string): name is HarnessName {
  return (HARNESSES as readonly string[]).includes(name);
}

export function harnessOfAction(action: string): HarnessName | null {
  const match = /^([a-z]+)-pre-tool-use$/.exec(action);
  return match?.[1] !== undefined && isHarness(match[1]) ? match[1] : null;
}
