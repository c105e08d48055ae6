/**
 * The git guard: `alock hooks install --git` writes a pre-commit hook, and `alock guard pre-commit`
 * (what that hook runs) refuses a commit whose staged paths another agent holds.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Answer, CliContext } from '../answers/answer.js';
import { exitCodeFor } from '../answers/contract.js';
import { describeHolder, paint, quoteArg } from '../answers/render.js';
import { packageBin } from '../host/package-bin.js';
import { AgentLockError } from '../core/errors.js';
import { type Identity, resolveIdentity } from '../core/identity.js';
import type { Lock } from '../core/lock.js';
import { scopeFromPattern, scopesOverlap, stagedPathScope } from '../core/scope.js';
import { makeDirs } from '../host/make-dirs.js';
import { ancestorChain, hostName } from '../host/process.js';

/** The line that tells our hook from anyone else's. */
const MARKER = '# agent-lock git guard';
/** Where an existing, foreign pre-commit hook is moved; ours runs it first. */
const CHAINED = 'pre-commit.local';

function git(args: string[], cwd: string, env: CliContext['io']['env']): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { cwd, env: env as NodeJS.ProcessEnv, encoding: 'buffer', maxBuffer: 1 << 30 },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        const why = stderr.toString('utf8').trim().split('\n')[0] || error.message;
        reject(
          new AgentLockError('E_USAGE', `git ${args[0]} failed in ${cwd}: ${why}`, {
            cause: error,
            hint: 'run it inside a git repository',
          }),
        );
      },
    );
  });
}

function workDir(cli: CliContext): string {
  return path.resolve(cli.io.cwd, cli.globals().dir ?? '.');
}

// ---------------------------------------------------------------------------------------------
// Installing the hook

const sh = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The hook: runs a chained hook first (its failure fails the commit), then the guard through the
 * node and bin script that installed it, falling back to `alock` on PATH when those have moved
 * (a node upgrade, a reinstall). No guard at all fails the commit: a guard that silently stops
 * guarding is worse than one that asks to be reinstalled.
 */
function hookScript(node: string, bin: string | null): string {
  return `#!/bin/sh
${MARKER} (installed by \`alock hooks install --git\`): refuses a commit whose staged paths
# another agent holds. AGENT_LOCK_GUARD=warn turns the refusal into a warning.
# A hook that was here before runs first, from ${CHAINED}; if it fails, the commit fails.
hooks=$(dirname -- "$0")
if [ -x "$hooks/${CHAINED}" ]; then
  "$hooks/${CHAINED}" "$@" || exit $?
fi
node=${sh(node)}
bin=${sh(bin ?? '')}
if [ -x "$node" ] && [ -f "$bin" ]; then
  exec "$node" "$bin" guard pre-commit
fi
if command -v alock >/dev/null 2>&1; then
  exec alock guard pre-commit
fi
echo "agent-lock: the git guard cannot find alock ($bin); reinstall it: alock hooks install --git" >&2
exit 2
`;
}

function lstatOrNull(p: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

function isOurs(p: string): boolean {
  const stat = lstatOrNull(p);
  return stat?.isFile() === true && readFileSync(p, 'utf8').includes(MARKER);
}

/** Writes beside the target and renames over it: a symlink at `file` is replaced, never followed. */
function writeHook(file: string, text: string): void {
  const temp = `${file}.alock-${process.pid}-${createHash('sha256').update(text).digest('hex').slice(0, 8)}`;
  writeFileSync(temp, text, { mode: 0o755, flag: 'wx' });
  chmodSync(temp, 0o755);
  renameSync(temp, file);
}

export async function installGitHook(cli: CliContext): Promise<Answer> {
  const cwd = workDir(cli);
  // --git-path honours core.hooksPath and a worktree's shared hooks folder.
  const out = (await git(['rev-parse', '--git-path', 'hooks'], cwd, cli.io.env)).toString('utf8').trim();
  const hooks = path.resolve(cwd, out);
  makeDirs(hooks);
  const hook = path.join(hooks, 'pre-commit');
  const chained = path.join(hooks, CHAINED);
  const text = hookScript(process.execPath, packageBin());
  const answer = (status: 'installed' | 'unchanged', lines: string[], message: string): Answer => ({
    command: 'hooks',
    status,
    exitCode: exitCodeFor('hooks', status),
    locks: [],
    conflicts: [],
    message,
    text: lines,
    extra: { hook, chained: lstatOrNull(chained) !== null ? chained : null },
  });
  const next = `next: a commit touching paths another agent holds is refused; AGENT_LOCK_GUARD=warn makes it a warning`;

  const existing = lstatOrNull(hook);
  if (existing !== null && isOurs(hook)) {
    if (readFileSync(hook, 'utf8') === text) {
      return answer(
        'unchanged',
        [`${paint(cli.style, 'green', 'UNCHANGED')} git pre-commit guard already installed at ${hook}`],
        `git pre-commit guard already installed at ${hook}`,
      );
    }
    writeHook(hook, text);
    return answer(
      'installed',
      [`${paint(cli.style, 'green', 'INSTALLED')} git pre-commit guard at ${hook} (updated)`, next],
      `updated the git pre-commit guard at ${hook}`,
    );
  }

  const lines = [`${paint(cli.style, 'green', 'INSTALLED')} git pre-commit guard at ${hook}`];
  if (existing !== null) {
    // Someone else's hook: keep it, moved aside (a symlink moves as a link), and run it first.
    if (lstatOrNull(chained) !== null) {
      throw new AgentLockError('E_USAGE', `both ${hook} and ${chained} exist, and neither is the guard`, {
        hint: `merge them into ${CHAINED}, or add "alock guard pre-commit" to your hook yourself`,
      });
    }
    renameSync(hook, chained);
    lines.push(
      `  your previous hook moved to ${chained}; it runs first, and its failure still fails the commit`,
    );
  }
  writeHook(hook, text);
  lines.push(next);
  return answer('installed', lines, `installed the git pre-commit guard at ${hook}`);
}

// ---------------------------------------------------------------------------------------------
// Running the guard

type GuardMode = 'refuse' | 'warn';

function guardMode(env: CliContext['io']['env']): GuardMode {
  const value = env.AGENT_LOCK_GUARD?.trim() ?? '';
  if (value === '' || value === 'refuse') return 'refuse';
  if (value === 'warn') return 'warn';
  throw new AgentLockError(
    'E_ENV_INVALID',
    `AGENT_LOCK_GUARD must be warn or refuse (got ${JSON.stringify(env.AGENT_LOCK_GUARD)})`,
    { hint: 'unset it to refuse commits of held paths' },
  );
}

/**
 * Staged paths from `git diff --cached --name-status -z`: NUL-separated, so spaces, quotes, unicode
 * and newlines arrive verbatim. A rename changes both its paths; a copy (diff.renames=copies) only
 * its new one.
 */
export function parseNameStatus(out: string): string[] {
  const fields = out.split('\0');
  if (fields[fields.length - 1] === '') fields.pop();
  const paths = new Set<string>();
  for (let i = 0; i < fields.length; ) {
    const status = fields[i++] ?? '';
    const first = fields[i++];
    if (first === undefined) break;
    if (status.startsWith('R') || status.startsWith('C')) {
      const second = fields[i++];
      if (status.startsWith('R')) paths.add(first);
      if (second !== undefined) paths.add(second);
    } else paths.add(first);
  }
  return [...paths];
}

function parentPid(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) && ppid > 0 ? ppid : null;
  } catch {
    return null;
  }
}

async function parentPidPortable(pid: number): Promise<number | null> {
  const fromProc = parentPid(pid);
  if (fromProc !== null || process.platform === 'linux') return fromProc;
  return new Promise((resolve) => {
    execFile('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }, (error, stdout) => {
      const ppid = Number(stdout.trim());
      resolve(!error && Number.isInteger(ppid) && ppid > 0 ? ppid : null);
    });
  });
}

/**
 * The committing agent. git itself is no agent: inside a hook the process fingerprint (and the
 * parent id that AGENT_ID implies) would name git, so an agent that holds files without setting
 * AGENT_ID would be refused its own commit. The identity is taken from above git instead, as the
 * agent's own `alock acquire` saw it.
 */
async function committer(cli: CliContext): Promise<Identity> {
  let who = cli.identity();
  for (let hops = 0; hops < 4 && /^git(-.*)?$/.test(who.holderName); hops++) {
    const above = await parentPidPortable(who.holder.pid);
    if (above === null) break;
    who = resolveIdentity(cli.io.env, ancestorChain(above), hostName());
  }
  return who;
}

const shown = (p: string) => (/[\p{Cc}]/u.test(p) ? JSON.stringify(p) : quoteArg(p));

/** `alock guard pre-commit`: the staged paths against other agents' locks, as the guard's answer. */
export async function guardPreCommit(cli: CliContext): Promise<Answer> {
  const mode = guardMode(cli.io.env);
  const cwd = workDir(cli);
  // The hook's environment is passed on: `git commit -a` or `git commit PATH` stage into a
  // temporary index named by GIT_INDEX_FILE, and that index is what will be committed.
  const top = (await git(['rev-parse', '--show-toplevel'], cwd, cli.io.env)).toString('utf8').trim();
  const staged = parseNameStatus(
    (
      await git(
        ['diff', '--cached', '--name-status', '-z', '-M', '--no-relative', '--no-ext-diff', '--'],
        cwd,
        cli.io.env,
      )
    ).toString('utf8'),
  );
  const locks = await cli.open();
  if (realpathSync(top) !== locks.tree.root) {
    throw new AgentLockError('E_USAGE', `git's work tree ${top} is not the tree ${locks.tree.root}`, {
      hint: 'run the guard from inside the work tree being committed',
    });
  }

  // Each staged path is taken exactly as git names it, shaped like a stored record's scope.
  const targets = staged.map((p) => ({ scope: stagedPathScope(p), path: p }));
  const who = targets.length > 0 ? await committer(cli) : cli.identity();
  // One decision for every staged path, the same one `check` makes (family rules, reaping), made
  // by the store as the committer: a dead holder it reaps has its frozen files thawed.
  const outcome = await locks.store.as(who).checkPaths(staged);
  const base = {
    command: 'guard',
    locks: [] as Lock[],
    conflicts: outcome.status === 'held' ? outcome.conflicts : [],
  };
  if (outcome.status !== 'held') {
    const answer: Answer = {
      ...base,
      status: 'clear',
      exitCode: 0,
      message: `${staged.length} staged paths, none held by another agent`,
      text: [],
      extra: { mode, paths: staged, held: [] },
    };
    // Quiet on success; under --json the envelope is still printed.
    return cli.globals().json ? answer : { ...answer, raw: { stdout: '' } };
  }

  const heldPaths = targets
    .map((t) => ({
      path: t.path,
      by: outcome.conflicts.filter((lock) => scopesOverlap(scopeFromPattern(lock.scope, 'path'), t.scope)),
    }))
    .filter((h) => h.by.length > 0);
  const now = Date.now();
  const lines: string[] = [];
  for (const h of heldPaths) {
    for (const lock of h.by) {
      lines.push(`  ${shown(h.path)}  lock ${lock.scope} ${describeHolder(lock, now, cli.style)}`);
    }
  }
  // A blocking lock no path could be traced to (an unreadable record) still blocks: fail closed.
  const traced = new Set(heldPaths.flatMap((h) => h.by.map((l) => l.id)));
  for (const lock of outcome.conflicts.filter((l) => !traced.has(l.id))) {
    lines.push(`  lock ${lock.scope} ${describeHolder(lock, now, cli.style)}`);
  }
  const holders = [...new Set(outcome.conflicts.map((l) => l.agent_id))].join(', ');
  const n = heldPaths.length;
  const what = `${n} staged ${n === 1 ? 'path is' : 'paths are'} held by ${holders}`;
  const unstage = heldPaths
    .slice(0, 5)
    .map((h) => shown(h.path))
    .join(' ');
  const status = mode === 'warn' ? 'warned' : 'held';
  const head =
    mode === 'warn'
      ? `${paint(cli.style, 'yellow', 'WARNING')} commit allowed (AGENT_LOCK_GUARD=warn), but ${what}`
      : `${paint(cli.style, 'red', 'HELD')} commit refused: ${what}`;
  return {
    ...base,
    status,
    exitCode: exitCodeFor('guard', status),
    message: mode === 'warn' ? `warning: ${what}` : `commit refused: ${what}`,
    text: [
      head,
      ...lines,
      `next: ask ${holders} to release, or unstage them (git restore --staged -- ${unstage}${n > 5 ? ' ...' : ''}); ${cli.name} check PATH tells when a path is free`,
      `  you committed as ${who.agentId} (${who.idSource}); if the lock is yours, commit with that AGENT_ID`,
    ],
    extra: {
      mode,
      paths: staged,
      held: heldPaths.map((h) => ({ path: h.path, locks: h.by.map((l) => l.id) })),
    },
  };
}
