import type { CliContext } from '../answers/answer.js';
import { packageBin } from '../host/package-bin.js';
import type { Installable } from './harness-install.js';

const sh = (text: string) =>
  /^[A-Za-z0-9@%+=:,./_-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The program a hook runs, by absolute paths: the node running this install and this package's
 * bin script. A harness starts hooks with its own PATH (a GUI app, a sandbox, a login shell that
 * never saw nvm): a bare `alock` there exits 127, which most harnesses take as "let it through".
 * `hooks install` run again writes the paths anew (after a node upgrade or a reinstall); `alock
 * doctor` says when they are gone. Without a package around (a bundle), `alock` on PATH.
 */
export function hookProgram(name: string): readonly string[] {
  const bin = packageBin();
  return bin === null ? [name] : [process.execPath, bin];
}

/** The program words of `hooks <action>`, each quoted for a shell where it needs it. */
function runWords(name: string, action: string): string {
  return `${hookProgram(name).map(sh).join(' ')} hooks ${action}`;
}

/**
 * The words a harness runs, and, for a harness that runs them in a shell, what happens when they
 * cannot run at all (node or the bin moved): exit 2, which Claude Code, Codex, Gemini CLI, Copilot
 * CLI and Cursor all read as "block this call", with the reason on stderr, unless
 * AGENT_LOCK_HOOK_ON_ERROR=allow. `--no-claim` (hooks install --no-claim): the hook only checks.
 */
function shellCommand(name: string, harness: Installable, noClaim: boolean): string {
  const program = hookProgram(name);
  const run = `${runWords(name, `${harness}-pre-tool-use`)}${noClaim ? ' --no-claim' : ''}`;
  const why = `agent-lock: the hook could not run ${program.join(' ')}; run: alock hooks install --for ${harness}`;
  return `${run} || { [ "$AGENT_LOCK_HOOK_ON_ERROR" = allow ] || { echo ${sh(why)} >&2; exit 2; }; }`;
}

/** The command Claude Code runs (exported for `hooks install --for claude`). */
export function hookCommand(_root: string, name: string, noClaim = false): string {
  return shellCommand(name, 'claude', noClaim);
}

export function runtimeCommand(
  cli: CliContext,
  _root: string,
  harness: Installable,
  noClaim = false,
): string {
  // OpenCode's plugin spawns the words itself; Cline's script adds its own failure answer.
  if (harness === 'opencode' || harness === 'cline') {
    return `${runWords(cli.name, `${harness}-pre-tool-use`)}${noClaim ? ' --no-claim' : ''}`;
  }
  return shellCommand(cli.name, harness, noClaim);
}

/**
 * The command a turn's (or session's) end runs to end the agent's claims (turn-end.ts), by the same
 * absolute paths, but never failing closed: exit 2 at a Stop hook (Claude Code, Codex, Gemini's
 * AfterAgent) would keep the agent going rather than end its turn. A claim left behind by an end
 * hook that could not run ends with its lease or its harness process.
 */
export function endRunCommand(name: string, harness: Installable, when: 'turn' | 'session'): string {
  return runWords(name, `${harness}-${when}-end`);
}

/** Cline's hook script: a run that fails still answers, refusing (Cline lets a failed hook's call go). */
export function clineScript(command: string): string {
  const why = 'agent-lock: the hook could not run; run: alock hooks install --for cline';
  return `#!/bin/sh
# agent-lock: refuses edits of files other agents hold (alock hooks install --for cline).
${command} && exit 0
[ "$AGENT_LOCK_HOOK_ON_ERROR" = allow ] && { echo '{"cancel":false}'; exit 0; }
echo '{"cancel":true,"errorMessage":"${why}"}'
`;
}

/**
 * What each harness still needs before the hook runs, said after an install: the switches and
 * trust a harness keeps outside the files alock writes. The paths were read from each harness's
 * source or changelog (docs/harnesses.md names the versions).
 */
export const HARNESS_NEEDS: Record<Installable, readonly string[]> = {
  claude: ['next: restart Claude Code (or review the hook in /hooks) so it is loaded'],
  codex: [
    'next: Codex runs project hooks only in a trusted project, and only hooks you trusted: trust the project ([projects."<tree>"] trust_level = "trusted" in $CODEX_HOME/config.toml, or answer its prompt), then trust the hook in /hooks (it records a hash of the entry; a changed entry, such as after hooks install, must be trusted again)',
  ],
  gemini: [
    'next: Gemini CLI skips project hooks in an untrusted folder (and with --skip-trust): trust this folder when it asks, or add it to ~/.gemini/trustedFolders.json',
  ],
  cursor: ['next: restart Cursor (or reload its hooks) so the hook is loaded'],
  opencode: [
    'next: restart OpenCode so the plugin is loaded (the plugin exports both the 1.x function and the 2.x {id, setup} shape)',
  ],
  copilot: [
    'next: Copilot CLI runs repository hooks only in a trusted folder: trust it when asked (kept in trustedFolders of ~/.copilot/config.json); in -p mode also set GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=1 where the folder is not yet trusted',
  ],
  cline: [
    'next: Cline runs hooks only with hooks enabled (the extension: Settings, Feature Settings, Enable Hooks); restart the task so the hook is found',
  ],
};
