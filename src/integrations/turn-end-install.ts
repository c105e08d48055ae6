/**
 * The hooks `alock hooks install` puts beside each harness's pre-tool hook to end the claims an
 * agent's edits took, at its turn's end or its session's (docs/claims.md): which events, in which
 * shape, and the runtime command (`<harness>-turn-end`, `<harness>-session-end`).
 */
import type { Installable, Json } from './harness-install.js';

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

/** The turn-end (or session-end) runtime beside a harness's pre-tool-use command. */
export function endCommand(command: string, harness: string, when: 'turn' | 'session'): string {
  return command.replace(`${harness}-pre-tool-use`, `${harness}-${when}-end`);
}

/** A harness's end-of-turn hook entries; none when claims are off (`--no-claim`): nothing to end. */
export function endEntries(harness: Installable, command: string): JsonEntry[] {
  if (command.endsWith(' --no-claim')) return [];
  return (END_EVENTS[harness] ?? []).map(([event, when]) => {
    const run = endCommand(command, harness, when);
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
