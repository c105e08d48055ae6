/**
 * `alock hooks install|uninstall --for <harness>`: puts the pre-tool-use hook where each harness
 * reads it, merged into what is there (every other key and hook kept, twice is once), and takes
 * only its own entries out again. A harness's file alock did not write and cannot merge into (a
 * Cline hook script of someone else's) is refused, never replaced.
 */
import { existsSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Answer, CliContext } from '../answers/answer.js';
import { AgentLockError } from '../core/errors.js';
import { HOOKED_TOOLS } from './claude-hook.js';
import { clineScript, HARNESS_NEEDS, runtimeCommand } from './hook-program.js';
import { codexSandbox } from './codex-sandbox.js';
import { lstatSafe, malformed, writeAtomically } from './settings-file.js';

export { malformed } from './settings-file.js';
import { CONFIG_FOLDER, type Installable } from './harness-choice.js';
import { opencodePlugin } from './opencode-plugin.js';
import { END_FILES, endCommand, endEntries, endEvents, endFile } from './turn-end-install.js';

export { HARNESS_NEEDS, hookCommand, hookProgram } from './hook-program.js';
export { CONFIG_FOLDER, harnessesFor, INSTALLABLE, type Installable } from './harness-choice.js';

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One hook entry to put under `hooks[event]` of a JSON settings file. */
interface JsonEntry {
  readonly event: string;
  readonly entry: Json;
}

interface JsonTarget {
  readonly kind: 'json';
  /** Relative to the tree's root. */
  readonly file: string;
  /** What a new file starts as, and what an emptied one is removed at. */
  readonly base: Json;
  readonly entries: (command: string) => JsonEntry[];
}

interface FileTarget {
  readonly kind: 'file';
  readonly file: string;
  readonly body: (command: string) => string;
  readonly executable: boolean;
}

type Target = JsonTarget | FileTarget;

/** Claude Code's shape, which Codex and Gemini CLI share: `{matcher, hooks: [{type, command}]}`. */
function matcherEntry(event: string, matcher: string, command: string): JsonEntry {
  return { event, entry: { matcher, hooks: [{ type: 'command', command }] } };
}

const TARGETS: Record<Installable, Target> = {
  claude: {
    kind: 'json',
    file: '.claude/settings.json',
    base: {},
    entries: (command) => [
      matcherEntry('PreToolUse', HOOKED_TOOLS.join('|'), command),
      matcherEntry('PostToolUse', HOOKED_TOOLS.join('|'), postCommand(command)),
    ],
  },
  codex: {
    kind: 'json',
    file: '.codex/hooks.json',
    base: {},
    entries: (command) => [
      matcherEntry('PreToolUse', 'apply_patch|Bash', command),
      matcherEntry('PostToolUse', 'apply_patch|Bash', postCommand(command)),
    ],
  },
  gemini: {
    kind: 'json',
    file: '.gemini/settings.json',
    base: {},
    entries: (command) => [
      matcherEntry('BeforeTool', 'write_file|replace|run_shell_command', command),
      matcherEntry('AfterTool', 'write_file|replace|run_shell_command', postCommand(command)),
    ],
  },
  cursor: {
    kind: 'json',
    file: '.cursor/hooks.json',
    base: { version: 1 },
    entries: (command) => [
      // failClosed: a hook that crashes, times out or answers nonsense blocks the call (Cursor's
      // default lets it through).
      {
        event: 'preToolUse',
        entry: { command, matcher: 'Write|Edit|StrReplace|MultiEdit|Delete|EditNotebook', failClosed: true },
      },
      { event: 'beforeShellExecution', entry: { command, failClosed: true } },
      // After a shell call nothing can be refused any more: no failClosed.
      { event: 'afterShellExecution', entry: { command: postCommand(command) } },
    ],
  },
  copilot: {
    kind: 'json',
    file: '.github/hooks/agent-lock.json',
    base: { version: 1 },
    entries: (command) => [
      { event: 'preToolUse', entry: { type: 'command', bash: command, timeoutSec: 30 } },
      { event: 'postToolUse', entry: { type: 'command', bash: postCommand(command), timeoutSec: 30 } },
    ],
  },
  opencode: {
    kind: 'file',
    file: '.opencode/plugins/agent-lock.js',
    body: (command) => opencodePlugin(command),
    executable: false,
  },
  cline: {
    kind: 'file',
    file: '.clinerules/hooks/PreToolUse',
    body: (command) => clineScript(command),
    executable: true,
  },
};

/**
 * Files a harness reads besides its main one: Cline runs a hook script per event, so its post-tool
 * hook (trespass-hooks.ts) is a second script beside the first.
 */
const EXTRA_FILES: Partial<Record<Installable, FileTarget>> = {
  cline: {
    kind: 'file',
    file: '.clinerules/hooks/PostToolUse',
    body: (command) =>
      `#!/bin/sh\n# agent-lock: tells of held files a shell command changed (alock hooks install --for cline).\nexec ${postCommand(command)}\n`,
    executable: true,
  },
};

/** The post-tool-use runtime beside a pre-tool-use one: `... hooks codex-pre-tool-use` -> `codex-post-tool-use`. */
export function postCommand(command: string): string {
  // `--no-claim` is the pre-tool hook's: the post-tool hook claims nothing either way.
  return command
    .replace(/-pre-tool-use(?=$|[\s"'])/, '-post-tool-use')
    .replace(/(-post-tool-use) --no-claim(?=$|\s)/, '$1');
}

/**
 * Whether a harness is set up here, for `alock doctor`: its folder missing (not used in this tree),
 * its configuration unreadable, our hook in it, or not.
 */
export function hookState(
  root: string,
  harness: Installable,
): 'no-folder' | 'unreadable' | 'installed' | 'missing' {
  if (!existsSync(path.join(root, CONFIG_FOLDER[harness]))) return 'no-folder';
  const target = TARGETS[harness];
  let text: string;
  try {
    text = readFileSync(path.join(root, target.file), 'utf8');
  } catch {
    return 'missing';
  }
  if (target.kind === 'json') {
    try {
      JSON.parse(text);
    } catch {
      return 'unreadable';
    }
  }
  // The pre-tool-use hook is the one that refuses: a post hook alone is not installed.
  return ourHook(harness, 'pre').test(text) ? 'installed' : 'missing';
}

/** The text of a harness's hook file (for `alock doctor`), or null when there is none. */
export function hookText(root: string, harness: Installable): string | null {
  try {
    return readFileSync(path.join(root, TARGETS[harness].file), 'utf8');
  } catch {
    return null;
  }
}

/**
 * Ours, whichever way the program was spelled (alock, agent-lock, npx, a node_modules/.bin path,
 * node and the package's bin/alock.js); its pre-tool-use hook, or any of its hooks (pre-tool, post-tool,
 * turn end, session end).
 */
function ourHook(harness: Installable, which: 'pre' | 'any' = 'any'): RegExp {
  const action = which === 'pre' ? 'pre-tool-use' : '(pre-tool-use|post-tool-use|turn-end|session-end)';
  return new RegExp(`(^|[\\s/"'])(alock|agent-lock)(\\.js)?["']?\\s+hooks\\s+${harness}-${action}(\\s|$|")`);
}

function isOurs(harness: Installable, entry: unknown): boolean {
  return ourHook(harness).test(JSON.stringify(entry));
}

/** The indentation the file already uses, so a merge does not reformat someone's settings. */
export function indentOf(text: string): string | number {
  const match = /\n([ \t]+)\S/.exec(text);
  return match?.[1] ?? 2;
}

interface Outcome {
  readonly harness: Installable;
  readonly status: 'installed' | 'unchanged' | 'uninstalled' | 'absent';
  readonly file: string;
  readonly command: string;
  /** The harness's second hook file (Cline's PostToolUse script). */
  readonly also?: string;
}

/** A JSON settings file as an object ({} when missing or blank); anything else is refused unchanged. */
export function readJson(shown: string, file: string, owner?: string): { text: string | null; value: Json } {
  let text: string | null = null;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text === null || text.trim() === '') return { text, value: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new AgentLockError(
      'E_USAGE',
      `${shown} is not valid JSON (${error instanceof Error ? error.message : error}); left unchanged`,
      { hint: 'fix the file, then run this again' },
    );
  }
  if (!isObject(parsed)) throw malformed(shown, 'it is not a JSON object', owner);
  return { text, value: parsed };
}

/** The hooks object and each event's list, checked before anything is written. */
function hookLists(shown: string, settings: Json, events: readonly string[]): Json {
  const hooks = settings.hooks ?? {};
  if (!isObject(hooks)) throw malformed(shown, '"hooks" is not an object');
  for (const event of events) {
    if (hooks[event] !== undefined && !Array.isArray(hooks[event])) {
      throw malformed(shown, `"hooks.${event}" is not a list`);
    }
  }
  return hooks;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function applyJson(
  root: string,
  harness: Installable,
  target: JsonTarget,
  command: string,
  install: boolean,
  write: boolean,
  ends: { readonly entries: readonly JsonEntry[]; readonly strip: readonly string[] },
): Outcome {
  const shown = path.join(root, target.file);
  // A symlinked settings file is written through (the link and where it points are kept).
  const file = lstatSafe(shown)?.isSymbolicLink() ? realpathSync(shown) : shown;
  const { text, value } = readJson(shown, file);
  // The pre-tool entries, the turn-end entries beside them (claims), and the events whose entries
  // of ours go (the turn ends, installed --no-claim: there is no claim to end).
  const entries = [...target.entries(command), ...ends.entries];
  const strip = ends.strip.filter((event) => !entries.some((e) => e.event === event));
  const events = [...entries.map((e) => e.event), ...strip];
  const settings: Json = text === null ? { ...target.base } : value;
  const hooks = hookLists(shown, settings, events);
  const nextHooks: Json = { ...hooks };
  let changed = false;
  const todo = [
    ...entries.map((e) => ({ ...e, remove: !install })),
    ...strip.map((event) => ({ event, entry: {}, remove: true })),
  ];
  for (const { event, entry, remove } of todo) {
    const list = (hooks[event] as unknown[] | undefined) ?? [];
    if (!remove) {
      // Ours already there: kept where it is, rewritten when its command or shape has changed
      // (`hooks install` again refreshes the absolute paths).
      const at = list.findIndex((e) => isOurs(harness, e));
      if (at >= 0 && sameJson(list[at], entry) && list.filter((e) => isOurs(harness, e)).length === 1) {
        continue;
      }
      nextHooks[event] =
        at < 0
          ? [...list, entry]
          : list.flatMap((e, i) => (i === at ? [entry] : isOurs(harness, e) ? [] : [e]));
      changed = true;
    } else {
      const kept = list.filter((e) => !isOurs(harness, e));
      if (kept.length === list.length) continue;
      changed = true;
      if (kept.length > 0) nextHooks[event] = kept;
      else delete nextHooks[event];
    }
  }
  const outcome = (status: Outcome['status']): Outcome => ({ harness, status, file: shown, command });
  if (!changed) return outcome(install ? 'unchanged' : 'absent');
  const next: Json = { ...settings, hooks: nextHooks };
  if (!install && Object.keys(nextHooks).length === 0) delete next.hooks;
  // Uninstalling from a file that held only alock's hook leaves what a new file starts as: remove it.
  if (!install && sameJson(next, target.base)) {
    if (write) rmSync(file, { force: true });
    return outcome('uninstalled');
  }
  const mode = (lstatSafe(file)?.mode ?? 0o644) & 0o777;
  if (write)
    writeAtomically(file, `${JSON.stringify(next, null, text === null ? 2 : indentOf(text))}\n`, mode);
  return outcome(install ? 'installed' : 'uninstalled');
}

function applyFile(
  root: string,
  harness: Installable,
  target: FileTarget,
  command: string,
  install: boolean,
  write: boolean,
): Outcome {
  const file = path.join(root, target.file);
  const stat = lstatSafe(file);
  const outcome = (status: Outcome['status']): Outcome => ({ harness, status, file, command });
  if (stat === null) {
    if (!install) return outcome('absent');
    if (write) writeAtomically(file, target.body(command), target.executable ? 0o755 : 0o644);
    return outcome('installed');
  }
  // Never written through a link, never replacing someone else's hook.
  const text = stat.isFile() ? readFileSync(file, 'utf8') : '';
  if (!stat.isFile() || !ourHook(harness).test(text)) {
    if (!install) return outcome('absent');
    throw new AgentLockError('E_USAGE', `${file} already exists and is not agent-lock's; left unchanged`, {
      hint: `call ${command} from it yourself, or move it aside and run this again`,
    });
  }
  if (!install) {
    if (write) rmSync(file);
    return outcome('uninstalled');
  }
  if (text === target.body(command)) return outcome('unchanged');
  if (write) writeAtomically(file, target.body(command), target.executable ? 0o755 : 0o644);
  return outcome('installed');
}

/** Installs (or removes) one harness's hook in the tree at `root`; `write: false` only checks. */
function applyHook(
  cli: CliContext,
  root: string,
  harness: Installable,
  install: boolean,
  write: boolean,
  noClaim = false,
): Outcome {
  const target = TARGETS[harness];
  const command = runtimeCommand(cli, root, harness, noClaim);
  // The turn-end hooks that end the agent's claims, by the same absolute program (never failing
  // closed). Installed --no-claim, ours of an earlier install are taken out: nothing to end.
  const claiming = install && !noClaim;
  const main =
    target.kind === 'json'
      ? applyJson(root, harness, target, command, install, write, {
          entries: claiming || !install ? endEntries(harness, cli.name) : [],
          strip: claiming ? [] : endEvents(harness),
        })
      : applyFile(root, harness, target, command, install, write);
  // Hook files of their own that end the agent's claims (Cline's task end), as above.
  const ends = END_FILES[harness] ?? [];
  const statuses = [
    main.status,
    ...ends.map(({ file, when }) => {
      const run = endCommand(cli.name, harness, when);
      const status = applyFile(root, harness, endFile(file), run, claiming, write).status;
      // An end file taken out by an install --no-claim is a change of that install.
      return install && status === 'uninstalled' ? 'installed' : status;
    }),
  ];
  const changed = install ? 'installed' : 'uninstalled';
  return statuses.includes(changed) ? { ...main, status: changed } : main;
}

/** The harness's extra hook file (applyHook's twin), or null when it has none. */
function applyExtra(
  cli: CliContext,
  root: string,
  harness: Installable,
  install: boolean,
  write: boolean,
): Outcome | null {
  const extra = EXTRA_FILES[harness];
  if (extra === undefined) return null;
  return applyFile(root, harness, extra, runtimeCommand(cli, root, harness), install, write);
}

const WORD: Record<Outcome['status'], string> = {
  installed: 'INSTALLED',
  unchanged: 'UNCHANGED',
  uninstalled: 'UNINSTALLED',
  absent: 'NOT INSTALLED',
};

/** Installs or removes the hooks of several harnesses, each checked before any is written. */
export function applyHooks(
  cli: CliContext,
  root: string,
  harnesses: readonly Installable[],
  install: boolean,
  options: { noClaim?: boolean } = {},
): Answer {
  const noClaim = options.noClaim === true;
  // Every file is read and checked first: a bad one stops the run before anything is written.
  for (const h of harnesses) {
    applyHook(cli, root, h, install, false, noClaim);
    applyExtra(cli, root, h, install, false);
  }
  if (harnesses.includes('codex')) codexSandbox(cli, root, install, false);
  const outcomes = harnesses.map((h) => {
    const main = applyHook(cli, root, h, install, true, noClaim);
    const extra = applyExtra(cli, root, h, install, true);
    if (extra === null) return main;
    // One harness, one outcome: its second file changed or not, as its first.
    const done = install ? 'installed' : 'uninstalled';
    const status = main.status === done || extra.status === done ? done : main.status;
    return { ...main, status, also: extra.file };
  });
  const sandbox = harnesses.includes('codex') ? codexSandbox(cli, root, install, true) : null;
  const changed = outcomes.some((o) => o.status === 'installed' || o.status === 'uninstalled');
  const status = install ? (changed ? 'installed' : 'unchanged') : changed ? 'uninstalled' : 'absent';
  const text = outcomes.map(
    (o) => `${WORD[o.status]} ${o.harness} hook in ${o.file}${o.also ? ` and ${o.also}` : ''}`,
  );
  if (install) for (const o of outcomes) text.push(...HARNESS_NEEDS[o.harness]);
  if (sandbox !== null) text.push(sandbox);
  if (install && changed) text.push('next: restart the agent (or reload its hooks) so the hook is loaded');
  return {
    command: 'hooks',
    status,
    exitCode: 0,
    locks: [],
    conflicts: [],
    message: text.join('; '),
    text,
    extra: {
      hooks: outcomes.map((o) => ({
        for: o.harness,
        status: o.status,
        file: o.file,
        command: o.command,
        ...(o.also ? { also: o.also } : {}),
      })),
    },
  };
}
