/**
 * The hooks `alock hooks install` puts beside each harness's pre-tool hook to end the claims an
 * agent's edits took, at its turn's end or its session's (docs/claims.md): which events, in which
 * shape, and the runtime command (`<harness>-turn-end`, `<harness>-session-end`).
 */
import type { Installable, Json } from './harness-install.js';
import { endRunCommand } from './hook-program.js';

/** A hook entry under `hooks[event]` of a JSON settings file (harness-install.ts's). */
interface JsonEntry {
  readonly event: string;
  readonly entry: Json;
}

/** A hook file of its own (harness-install.ts's file target). */
interface FileTarget {
  readonly kind: 'file';
  readonly file: string;
  readonly body: (command: string) => string;
  readonly executable: boolean;
}

/**
 * The events at which each harness's agent ends its turn (or session), each verified in the
 * harness's own documentation or source: their hook ends the claims the agent's edits took
 * (docs/claims.md). Cline's and OpenCode's are in their hook files (not JSON settings).
 */
const END_EVENTS: Partial<Record<Installable, readonly (readonly [string, 'turn' | 'session'])[]>> = {
  claude: [
    ['Stop', 'turn'],
    ['SubagentStop', 'turn'],
    ['SessionEnd', 'session'],
  ],
  codex: [['Stop', 'turn']],
  gemini: [
    ['AfterAgent', 'turn'],
    ['SessionEnd', 'session'],
  ],
  cursor: [['stop', 'turn']],
  copilot: [
    ['agentStop', 'turn'],
    ['sessionEnd', 'session'],
  ],
};

/**
 * The turn-end (or session-end) runtime beside a harness's pre-tool-use command: `<program>` is the
 * name the CLI runs as, written as the same absolute paths as the pre-tool hook (hook-program.ts).
 */
export function endCommand(name: string, harness: Installable, when: 'turn' | 'session'): string {
  return endRunCommand(name, harness, when);
}

/** The events whose hook ends a harness's claims (removed again by `--no-claim` and uninstall). */
export function endEvents(harness: Installable): string[] {
  return (END_EVENTS[harness] ?? []).map(([event]) => event);
}

/**
 * A harness's end-of-turn hook entries. The caller puts none when claims are off (`--no-claim`):
 * nothing to end.
 */
export function endEntries(harness: Installable, name: string): JsonEntry[] {
  return (END_EVENTS[harness] ?? []).map(([event, when]) => {
    const run = endCommand(name, harness, when);
    const entry: Json =
      harness === 'cursor'
        ? { command: run }
        : harness === 'copilot'
          ? { type: 'command', bash: run, timeoutSec: 30 }
          : { hooks: [{ type: 'command', command: run }] };
    return { event, entry };
  });
}

/** Cline runs a hook file per event: its task's end (complete or cancelled) ends the task's claims. */
export const END_FILES: Partial<Record<Installable, readonly { file: string; when: 'turn' | 'session' }[]>> =
  {
    cline: [
      { file: '.clinerules/hooks/TaskComplete', when: 'session' },
      { file: '.clinerules/hooks/TaskCancel', when: 'session' },
    ],
  };

export function endFile(file: string): FileTarget {
  return {
    kind: 'file',
    file,
    body: (command) =>
      `#!/bin/sh\n# agent-lock: ends the claims this task's edits took (alock hooks install --for cline).\nexec ${command}\n`,
    executable: true,
  };
}
