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

/** The harnesses whose turn end (or session end) ends the claims their edits took. */
export const ENDING = ['claude', ...HARNESSES] as const;

export interface EndAction {
  readonly harness: (typeof ENDING)[number];
  readonly when: 'turn' | 'session';
}

/** `claude-turn-end` -> claude at turn end; `gemini-session-end` -> gemini at session end. */
export function endOfAction(action: string): EndAction | null {
  const match = /^([a-z]+)-(turn|session)-end$/.exec(action);
  const name = match?.[1];
  if (name === undefined || !(ENDING as readonly string[]).includes(name)) return null;
  return { harness: name as EndAction['harness'], when: match![2] as 'turn' | 'session' };
}
