/**
 * Which harnesses `alock hooks install|uninstall --for ...` means: one, several, or every one whose
 * configuration folder is in the tree.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { CliContext } from '../answers/answer.js';
import { AgentLockError } from '../core/errors.js';

export const INSTALLABLE = ['claude', 'codex', 'gemini', 'cursor', 'opencode', 'copilot', 'cline'] as const;
export type Installable = (typeof INSTALLABLE)[number];

/** The folder whose presence means a harness is used here (`--for all`). */
export const CONFIG_FOLDER: Record<Installable, string> = {
  claude: '.claude',
  codex: '.codex',
  gemini: '.gemini',
  cursor: '.cursor',
  opencode: '.opencode',
  copilot: '.github/hooks',
  cline: '.clinerules',
};

/** `--for` as a list: one harness, several (comma-separated), or all whose folder exists here. */
export function harnessesFor(cli: CliContext, root: string, value: unknown): Installable[] {
  const text = typeof value === 'string' ? value : 'claude';
  if (text === 'all') {
    const found = INSTALLABLE.filter((h) => existsSync(path.join(root, CONFIG_FOLDER[h])));
    if (found.length === 0) {
      throw new AgentLockError('E_USAGE', `no agent's configuration folder in ${root}`, {
        hint: `name one: ${cli.name} hooks install --for ${INSTALLABLE.join('|')}`,
      });
    }
    return found;
  }
  const names = text.split(',').map((s) => s.trim());
  for (const name of names) {
    if (!(INSTALLABLE as readonly string[]).includes(name)) {
      throw new AgentLockError(
        'E_USAGE',
        `--for must be one of ${INSTALLABLE.join(', ')} or all (got ${JSON.stringify(name)})`,
        {
          hint: `${cli.name} hooks install --for claude`,
        },
      );
    }
  }
  return names as Installable[];
}
