/**
 * The checks of this host and checkout: who you are, which agent harnesses have agent-lock's hooks,
 * and files left read-only by `acquire --enforce` with no lock to thaw them.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Identity } from '../core/identity.js';
import type { Lock } from '../core/lock.js';
import { CONFIG_FOLDER, hookState, hookText, INSTALLABLE } from '../integrations/harness-install.js';
import { type Finding, note, ok, problem, some } from './finding.js';
import {
  bareFinding,
  bareProgram,
  codexTrust,
  copilotTrust,
  geminiTrust,
  goneProgram,
  staleFinding,
} from './harness-trust.js';

type Env = Readonly<Record<string, string | undefined>>;

export function identityFindings(id: Identity): Finding[] {
  const found = [
    ok(
      'identity',
      'agent',
      `agent ${id.agentId} (from ${id.idSource}); locks live while pid ${id.holder.pid} (${id.holderName}) runs`,
    ),
  ];
  if (id.parentAgentId !== null && id.parentSource === 'without AGENT_ID') {
    found.push(
      note(
        'identity',
        'parent_inferred',
        `parent ${id.parentAgentId} was inferred (the id this process has without AGENT_ID): its locks do not block you, and yours block it`,
        'if you are no sub-agent of it, set AGENT_PARENT_ID to the parent you mean, or AGENT_PARENT_ID=none for no parent',
      ),
    );
  } else if (id.parentAgentId !== null) {
    found.push(ok('identity', 'parent', `parent ${id.parentAgentId} (from ${id.parentSource})`));
  }
  for (const warning of id.warnings) found.push(note('identity', 'identity_warning', warning));
  return found;
}

/** A program on PATH, as a shell would find it. */
export function onPath(program: string, env: Env): boolean {
  return (env.PATH ?? '').split(path.delimiter).some((dir) => {
    if (dir === '') return false;
    try {
      accessSync(path.join(dir, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

export interface HookContext {
  readonly root: string;
  /** The folder git runs hooks from (core.hooksPath and worktrees respected); null outside git. */
  readonly gitHooks: string | null;
  readonly env: Env;
  /** The program name the user typed, for suggested commands. */
  readonly name: string;
}

/**
 * One agent harness (or git) whose hook agent-lock installs. Add one per harness that
 * `alock hooks install` learns: `check` says whether it is installed and would run.
 */
export interface HookCheck {
  readonly harness: string;
  /** Null: nothing to say (the harness is not used in this tree). */
  check(ctx: HookContext): Finding | readonly Finding[] | null;
}

/**
 * An install a user can run today: the package is not on npm yet, so `npm install -g agent-lock`
 * would fail. The README's quick start says the same.
 */
export const HOW_TO_INSTALL =
  'from a clone of agent-lock: npm ci && npm run build && npm install -g . ; or npm install -g ./agent-lock-VERSION.tgz, made by npm pack in a clone; once published: npm install -g agent-lock';

const CLAUDE_COMMAND = /(?:^|[\s/"'])(alock|agent-lock)(\.js)?["']?\s+hooks\s+claude-pre-tool-use(?:\s|$)/;

function claudeHookCommand(file: string): string | null | 'invalid' {
  let settings: unknown;
  try {
    settings = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return 'invalid';
  }
  const entries = (settings as { hooks?: { PreToolUse?: unknown } } | null)?.hooks?.PreToolUse;
  if (!Array.isArray(entries)) return null;
  for (const entry of entries) {
    const hooks = (entry as { hooks?: unknown } | null)?.hooks;
    if (!Array.isArray(hooks)) continue;
    for (const hook of hooks) {
      const command = (hook as { command?: unknown } | null)?.command;
      if (typeof command === 'string' && CLAUDE_COMMAND.test(command)) return command;
    }
  }
  return null;
}

/** Would this hook command find its program? Claude Code sets $CLAUDE_PROJECT_DIR for hooks. */
function runnable(command: string, ctx: HookContext): boolean {
  const first = command.trim().split(/\s+/)[0] ?? '';
  const program = first
    .replace(/["']/g, '')
    .replace(/^\$CLAUDE_PROJECT_DIR|^\$\{CLAUDE_PROJECT_DIR\}/, ctx.root);
  if (program.includes('/')) {
    try {
      accessSync(program, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }
  return onPath(program, ctx.env);
}

const claudeCode: HookCheck = {
  harness: 'claude',
  check(ctx) {
    const install = `${ctx.name} hooks install --for claude`;
    for (const name of ['settings.json', 'settings.local.json']) {
      const file = path.join(ctx.root, '.claude', name);
      if (!existsSync(file)) continue;
      const command = claudeHookCommand(file);
      if (command === 'invalid')
        return problem(
          'hooks',
          'hook_claude_settings',
          `${file} is not valid JSON: Claude Code ignores it`,
          'fix the file',
        );
      if (command === null) continue;
      const gone = goneProgram(command, 'claude');
      if (gone !== null) return staleFinding('claude', gone, install);
      if (!runnable(command, ctx)) {
        return problem(
          'hooks',
          'hook_claude_unrunnable',
          `Claude Code runs "${command}" (${file}), which it cannot find: it gets exit 127 and lets every edit through`,
          `install agent-lock where the hook looks (${HOW_TO_INSTALL}), then ${install}`,
        );
      }
      return ok('hooks', 'hook_claude', `Claude Code: PreToolUse hook in ${file}`);
    }
    return note(
      'hooks',
      'hook_claude_missing',
      'Claude Code: no agent-lock hook in .claude/settings.json',
      install,
    );
  },
};

const GUARD_MARKER = '# agent-lock git guard';

const gitGuard: HookCheck = {
  harness: 'git',
  check(ctx) {
    const install = `${ctx.name} hooks install --git`;
    if (ctx.gitHooks === null)
      return note('hooks', 'hook_git_none', 'git: not a git repository, no pre-commit guard');
    const hook = path.join(ctx.gitHooks, 'pre-commit');
    let text: string;
    try {
      text = lstatSync(hook).isFile() ? readFileSync(hook, 'utf8') : '';
    } catch {
      return note('hooks', 'hook_git_missing', 'git: no pre-commit guard', install);
    }
    if (!text.includes(GUARD_MARKER))
      return note(
        'hooks',
        'hook_git_foreign',
        `git: ${hook} is not agent-lock's guard`,
        `${install} (it keeps yours and runs it first)`,
      );
    try {
      accessSync(hook, constants.X_OK);
    } catch {
      return problem(
        'hooks',
        'hook_git_unrunnable',
        `git: ${hook} is not executable, so git skips it`,
        `chmod +x ${hook}`,
      );
    }
    const quoted = (name: string) =>
      new RegExp(`^${name}='(.*)'$`, 'm').exec(text)?.[1]?.replace(/'\\''/g, "'") ?? '';
    const node = quoted('node');
    const bin = quoted('bin');
    if (existsSync(node) && bin !== '' && existsSync(bin))
      return ok('hooks', 'hook_git', `git: pre-commit guard at ${hook}`);
    if (onPath('alock', ctx.env))
      return note(
        'hooks',
        'hook_git_moved',
        `git: the guard's ${node} ${bin} moved; it falls back to alock on PATH`,
        install,
      );
    return problem(
      'hooks',
      'hook_git_unrunnable',
      `git: the guard at ${hook} cannot find alock, so every commit fails`,
      install,
    );
  },
};

/** The other agents' hooks (`hooks install --for AGENT`): reported where the agent's folder exists. */
const otherAgents: HookCheck[] = INSTALLABLE.filter((harness) => harness !== 'claude').map((harness) => ({
  harness,
  check(ctx) {
    const install = `${ctx.name} hooks install --for ${harness}`;
    const file = `${CONFIG_FOLDER[harness]}/`;
    switch (hookState(ctx.root, harness)) {
      case 'no-folder':
        return null;
      case 'unreadable':
        return problem(
          'hooks',
          `hook_${harness}_invalid`,
          `${harness}: its configuration in ${file} is not valid JSON`,
          'fix the file',
        );
      case 'installed': {
        const text = hookText(ctx.root, harness) ?? '';
        const gone = goneProgram(text, harness);
        if (gone !== null) return staleFinding(harness, gone, install);
        const found: Finding[] = [
          bareProgram(text, harness)
            ? bareFinding(harness, install, onPath('alock', ctx.env) || onPath('agent-lock', ctx.env))
            : ok('hooks', `hook_${harness}`, `${harness}: agent-lock hook installed in ${file}`),
        ];
        // Where the harness keeps its trust in a file we can read: will it run the hook at all?
        if (harness === 'codex') found.push(codexTrust(ctx.root, ctx.env));
        if (harness === 'gemini') found.push(geminiTrust(ctx.root, ctx.env));
        if (harness === 'copilot') found.push(copilotTrust(ctx.root, ctx.env));
        return found;
      }
      default:
        return note(
          'hooks',
          `hook_${harness}_missing`,
          `${harness}: ${file} exists but has no agent-lock hook`,
          install,
        );
    }
  },
}));

export const HOOK_CHECKS: readonly HookCheck[] = [claudeCode, ...otherAgents, gitGuard];

/** The folder git runs hooks from, or null outside a git repository. */
export function gitHooksDir(root: string, env: Env): string | null {
  try {
    const out = execFileSync('git', ['rev-parse', '--git-path', 'hooks'], {
      cwd: root,
      env: env as NodeJS.ProcessEnv,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return path.resolve(root, out.trim());
  } catch {
    return null;
  }
}

/**
 * Tracked files that are read-only while no lock records freezing them: what `--enforce` leaves
 * when a lock's record is lost (a store moved aside, a record broken on another host). Git checks
 * files out writable, so a read-only tracked file is rare on purpose.
 */
export function freezeFindings(
  root: string,
  git: boolean,
  locks: readonly Lock[] | null,
  name: string,
): Finding[] {
  if (!git) return [note('freezes', 'freeze_not_git', 'not a git repository: no tracked files to look at')];
  let listed: string;
  try {
    listed = execFileSync('git', ['ls-files', '-z'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 1 << 28,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return [note('freezes', 'freeze_unknown', 'git ls-files failed: cannot look for frozen files')];
  }
  const readOnly = listed
    .split('\0')
    .filter(Boolean)
    .map((file) => path.join(root, file))
    .filter((file) => {
      try {
        const stat = lstatSync(file);
        return stat.isFile() && (stat.mode & 0o200) === 0;
      } catch {
        return false;
      }
    });
  const frozen = new Set((locks ?? []).flatMap((l) => l.frozen_paths));
  const found: Finding[] = [];
  if (frozen.size > 0)
    found.push(
      ok(
        'freezes',
        'frozen',
        `${frozen.size} ${frozen.size === 1 ? 'file' : 'files'} frozen by live locks (acquire --enforce)`,
      ),
    );
  const left = readOnly.filter((file) => !frozen.has(file));
  if (left.length === 0) {
    if (frozen.size === 0) found.push(ok('freezes', 'freeze_none', 'no tracked file is read-only'));
    return found;
  }
  if (locks === null) {
    found.push(
      note(
        'freezes',
        'freeze_unknown',
        `${left.length} tracked files are read-only; the store could not be read to tell whether a lock froze them`,
      ),
    );
    return found;
  }
  const shown = left.map((file) => path.relative(root, file));
  found.push(
    problem(
      'freezes',
      'freeze_left_behind',
      `${left.length} tracked ${left.length === 1 ? 'file is' : 'files are'} read-only with no lock freezing ${left.length === 1 ? 'it' : 'them'} (left by acquire --enforce?): ${some(shown)}`,
      `chmod u+w each of them, unless someone made ${left.length === 1 ? 'it' : 'them'} read-only on purpose (${name} list shows the live freezes)`,
    ),
  );
  return found;
}
