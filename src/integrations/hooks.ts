/**
 * `alock hooks install --for claude` merges the PreToolUse hook into the project's Claude Code
 * settings (every other key and hook kept, twice is once); `alock hooks claude-pre-tool-use` is that
 * hook's runtime. `--git` belongs to the git guard.
 */
import { type Stats, lstatSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Answer, CliContext } from '../answers/answer.js';
import { AgentLockError } from '../core/errors.js';
import { makeDirs } from '../host/make-dirs.js';
import { findTree } from '../host/tree.js';
import { claudePreToolUse, HOOKED_TOOLS } from './claude-hook.js';
import { harnessOfAction, harnessPreToolUse } from './harness-hooks.js';
import { endOfAction } from './harness-names.js';
import { harnessPostToolUse, postHarnessOfAction, preToolUseTold } from './trespass-hooks.js';
import { endCommand, endEntries } from './turn-end-install.js';

export { isDirectHook, runDirectHook } from './hook-direct.js';
import {
  applyHooks,
  HARNESS_NEEDS,
  harnessesFor,
  postCommand,
  hookCommand,
  indentOf,
  isObject,
  malformed,
  readJson,
} from './harness-install.js';

/** Ours, whichever way it was spelled (alock, agent-lock, npx, a node_modules/.bin path). */
const OUR_HOOK = /(^|[\s/"'])(alock|agent-lock)(\.js)?["']?\s+hooks\s+claude-pre-tool-use(\s|$)/;
const OUR_POST_HOOK = /(^|[\s/"'])(alock|agent-lock)(\.js)?["']?\s+hooks\s+claude-post-tool-use(\s|$)/;

function treeRoot(cli: CliContext): string {
  const start = path.resolve(cli.io.cwd, cli.globals().dir ?? '.');
  try {
    return findTree(start).root;
  } catch (error) {
    throw new AgentLockError('E_USAGE', `the folder ${start} does not exist or cannot be read`, {
      cause: error,
      hint: 'run it inside the tree, or pass --dir',
    });
  }
}

/** Our turn-end (or session-end) hook, however the program was spelled. */
const OUR_END = /(^|[\s/"'])(alock|agent-lock)(\.js)?["']?\s+hooks\s+claude-(turn|session)-end(\s|$)/;

function isOurEntry(entry: unknown, ours = OUR_HOOK): boolean {
  return (
    isObject(entry) &&
    Array.isArray(entry.hooks) &&
    entry.hooks.some((hook) => isObject(hook) && typeof hook.command === 'string' && ours.test(hook.command))
  );
}

/**
 * One hook list with our entry in it: appended when none of ours is there, else an older entry of
 * ours (another command, other tools) replaced where it stands and any second one dropped.
 * `current`: it was already exactly that, nothing to write.
 */
function placed(list: unknown[], entry: unknown, ours: RegExp): { list: unknown[]; current: boolean } {
  const mine = list.filter((e) => isOurEntry(e, ours));
  if (mine.length === 1 && JSON.stringify(mine[0]) === JSON.stringify(entry)) return { list, current: true };
  const at = list.findIndex((e) => isOurEntry(e, ours));
  return {
    list:
      at < 0
        ? [...list, entry]
        : list.flatMap((e, i) => (i === at ? [entry] : isOurEntry(e, ours) ? [] : [e])),
    current: false,
  };
}

function installClaude(cli: CliContext, noClaim: boolean): Answer {
  const root = treeRoot(cli);
  const shown = path.join(root, '.claude', 'settings.json');
  // A symlinked settings file is written through (the link and where it points are kept).
  const file = lstatSafe(shown)?.isSymbolicLink() ? realpathSync(shown) : shown;
  const { text, value: settings } = readJson(shown, file, 'Claude Code');
  const hooks = settings.hooks ?? {};
  if (!isObject(hooks)) throw malformed(shown, '"hooks" is not an object', 'Claude Code');
  const pre = hooks.PreToolUse ?? [];
  if (!Array.isArray(pre)) throw malformed(shown, '"hooks.PreToolUse" is not a list', 'Claude Code');
  const post = hooks.PostToolUse ?? [];
  if (!Array.isArray(post)) throw malformed(shown, '"hooks.PostToolUse" is not a list', 'Claude Code');
  const command = hookCommand(root, cli.name, noClaim);
  const after = postCommand(command);
  const extra = { hooks: { settings: shown, command, post: after, matcher: HOOKED_TOOLS.join('|') } };
  const entry = { matcher: HOOKED_TOOLS.join('|'), hooks: [{ type: 'command', command }] };
  // After each call, the PostToolUse hook tells of held files a shell command changed anyway.
  const postEntry = { matcher: HOOKED_TOOLS.join('|'), hooks: [{ type: 'command', command: after }] };
  const preNow = placed(pre, entry, OUR_HOOK);
  const postNow = placed(post, postEntry, OUR_POST_HOOK);
  // The turn-end hooks that end the claims the agent's edits took, by the same absolute program;
  // installed --no-claim, ours of an earlier install go (nothing to end).
  const ends = endEntries('claude', cli.name);
  for (const { event } of ends) {
    if (hooks[event] !== undefined && !Array.isArray(hooks[event]))
      throw malformed(shown, `"hooks.${event}" is not a list`, 'Claude Code');
  }
  const endLists: Record<string, unknown[]> = {};
  for (const { event, entry: end } of ends) {
    const list = (hooks[event] as unknown[] | undefined) ?? [];
    if (noClaim) {
      const kept = list.filter((e) => !isOurEntry(e, OUR_END));
      if (kept.length !== list.length) endLists[event] = kept;
    } else {
      const now = placed(list, end, OUR_END);
      if (!now.current) endLists[event] = now.list;
    }
  }
  const endsNow = Object.keys(endLists).length === 0;
  if (preNow.current && postNow.current && endsNow) {
    return {
      command: 'hooks',
      status: 'unchanged',
      exitCode: 0,
      locks: [],
      conflicts: [],
      message: `unchanged ${shown}`,
      text: [`UNCHANGED ${shown} (the agent-lock PreToolUse and PostToolUse hooks are already there)`],
      extra,
    };
  }
  const nextHooks: Record<string, unknown> = { ...hooks, PreToolUse: preNow.list, PostToolUse: postNow.list };
  for (const [event, list] of Object.entries(endLists)) {
    if (list.length > 0) nextHooks[event] = list;
    else delete nextHooks[event];
  }
  const next = { ...settings, hooks: nextHooks };
  const body = `${JSON.stringify(next, null, text === null ? 2 : indentOf(text))}\n`;
  writeAtomically(file, body, lstatSafe(file)?.mode);
  return {
    command: 'hooks',
    status: 'installed',
    exitCode: 0,
    locks: [],
    conflicts: [],
    message: `installed the ${[preNow.current ? null : 'PreToolUse', postNow.current ? null : 'PostToolUse', ...(noClaim || endsNow ? [] : Object.keys(endLists))].filter(Boolean).join(' and ') || 'PreToolUse'} hook in ${shown}`,
    text: [
      ...(preNow.current
        ? []
        : [
            `INSTALLED PreToolUse hook in ${shown}`,
            `  ${HOOKED_TOOLS.join(', ')} -> ${command}`,
            '  edits of files other agents hold are refused; each sub-agent runs shell commands with its own AGENT_ID',
            ...(noClaim ? ['  --no-claim: edits only check, and claim nothing'] : []),
          ]),
      ...(postNow.current
        ? []
        : [
            `INSTALLED PostToolUse hook in ${shown}`,
            `  ${HOOKED_TOOLS.join(', ')} -> ${after}`,
            '  a held file a shell command changed anyway is recorded and told to both agents',
          ]),
      ...(endsNow
        ? []
        : noClaim
          ? [
              `UNINSTALLED ${Object.keys(endLists).join(', ')} hooks in ${shown} (--no-claim: no claim to end)`,
            ]
          : [
              `INSTALLED ${Object.keys(endLists).join(', ')} hooks in ${shown}`,
              `  -> ${endCommand(cli.name, 'claude', 'turn')} (SessionEnd: claude-session-end)`,
              '  an edit claims the file it writes until the turn ends (AGENT_LOCK_CLAIM=off turns that off)',
            ]),
      ...HARNESS_NEEDS.claude,
    ],
    extra,
  };
}

function lstatSafe(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/** Written aside and renamed over: Claude Code never reads half a settings file. */
function writeAtomically(file: string, body: string, mode: number | undefined): void {
  makeDirs(path.dirname(file));
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    writeFileSync(temp, body, { flag: 'wx', mode: mode === undefined ? 0o644 : mode & 0o777 });
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

export async function hooksAction(
  cli: CliContext,
  action: string,
  opts: Record<string, unknown>,
): Promise<Answer> {
  if (opts.claim === false && action !== 'install' && action !== 'uninstall') {
    // `hooks <harness>-pre-tool-use --no-claim` (installed by `hooks install --no-claim`): the
    // hook only checks, as AGENT_LOCK_CLAIM=off says.
    const io = { ...cli.io, env: { ...cli.io.env, AGENT_LOCK_CLAIM: 'off' } };
    cli = Object.create(cli, { io: { value: io } }) as CliContext;
  }
  if (action === 'claude-pre-tool-use') return preToolUseTold(cli, 'claude', claudePreToolUse);
  const harness = harnessOfAction(action);
  if (harness !== null) return preToolUseTold(cli, harness, (told) => harnessPreToolUse(told, harness));
  const post = postHarnessOfAction(action);
  if (post !== null) return harnessPostToolUse(cli, post);
  if (endOfAction(action) !== null) return (await import('./turn-end.js')).endOfTurn(cli, action);
  if (action !== 'install' && action !== 'uninstall') {
    throw new AgentLockError('E_USAGE', `unknown hooks action ${JSON.stringify(action)}`, {
      hint: `${cli.name} hooks install --for claude|codex|gemini|cursor|opencode|copilot|cline|all, or ${cli.name} hooks install --git`,
    });
  }
  if (opts.git === true) {
    if (opts.for !== undefined)
      throw new AgentLockError('E_USAGE', 'hooks install takes --for AGENT or --git, one at a time', {
        hint: 'run hooks install once for each',
      });
    if (action === 'uninstall') {
      throw new AgentLockError('E_USAGE', 'hooks uninstall --git is not supported', {
        hint: 'remove the agent-lock lines from .git/hooks/pre-commit',
      });
    }
    // The git guard's own module, loaded only for --git.
    const { installGitHook } = await import('./git-guard.js');
    return installGitHook(cli);
  }
  const root = treeRoot(cli);
  const harnesses = harnessesFor(cli, root, opts.for);
  // Claude alone keeps its own wording (and its settings file checks); every other case is generic.
  const noClaim = opts.claim === false;
  if (action === 'install' && harnesses.length === 1 && harnesses[0] === 'claude')
    return installClaude(cli, noClaim);
  return applyHooks(cli, root, harnesses, action === 'install', { noClaim });
}
