/**
 * `alock conflicts [--base BRANCH]`: which files would conflict if this worktree's branch were merged
 * with every other worktree's branch (and the base), and who holds locks on them on both sides.
 *
 * Read-only by construction: `git merge-tree --write-tree` (git 2.38+) merges in memory and touches
 * no worktree, index or ref; the objects it must write go to a temporary object folder (the
 * repository's own objects are read as an alternate), so not even the object store grows. Results
 * are cached in the store folder by the pair of commits merged: they hold while no branch head moves.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentLockError } from '../core/errors.js';
import type { Lock } from '../core/lock.js';
import { scopeFromPattern, scopesOverlap } from '../core/scope.js';
import { findTree, storeDirFor } from '../host/tree.js';
import type { Answer } from '../answers/answer.js';
import { quoteArg } from '../answers/render.js';
import type { Cli } from './context.js';

/** The first git with `merge-tree --write-tree`. */
const MIN_GIT = [2, 38] as const;
const CACHE_FILE = 'conflicts-cache.json';
const CACHE_LIMIT = 256;

interface Worktree {
  readonly path: string;
  readonly head: string;
  /** Short branch name; null on a detached HEAD. */
  readonly branch: string | null;
}

export interface ConflictingFile {
  file: string;
  /** Locks in this worktree whose scope overlaps the file. */
  ours: Lock[];
  /** Locks in the other side's worktree (none for a base not checked out anywhere). */
  theirs: Lock[];
}

export interface PairResult {
  branch: string;
  worktree: string | null;
  head: string;
  base: boolean;
  cached: boolean;
  conflicts: ConflictingFile[];
}

type Env = Readonly<Record<string, string | undefined>>;

function usage(message: string, hint: string): AgentLockError {
  return new AgentLockError('E_USAGE', message, { hint });
}

function git(
  args: readonly string[],
  cwd: string,
  env: Env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { cwd, env: env as NodeJS.ProcessEnv, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = (error as { code?: unknown } | null)?.code;
        if (code === 'ENOENT') {
          reject(usage('git was not found', `install git ${MIN_GIT.join('.')} or newer`));
          return;
        }
        if (error && typeof code !== 'number') {
          reject(
            new AgentLockError('E_INTERNAL', `git ${args[0]} failed: ${error.message}`, { cause: error }),
          );
          return;
        }
        resolve({ code: typeof code === 'number' ? code : 0, stdout, stderr });
      },
    );
  });
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

async function checkGitVersion(cwd: string, env: Env): Promise<void> {
  const { stdout } = await git(['--version'], cwd, env);
  const match = /git version (\d+)\.(\d+)/.exec(stdout);
  const major = Number(match?.[1] ?? 0);
  const minor = Number(match?.[2] ?? 0);
  if (major < MIN_GIT[0] || (major === MIN_GIT[0] && minor < MIN_GIT[1])) {
    throw usage(
      `conflicts needs git ${MIN_GIT.join('.')} or newer for merge-tree --write-tree (found ${firstLine(stdout) || 'an unknown version'})`,
      'upgrade git',
    );
  }
}

/** `git worktree list --porcelain -z`: records of `key value` fields, ended by an empty field. */
function parseWorktrees(text: string): Worktree[] {
  const list: Worktree[] = [];
  let current: { path?: string; head?: string; branch: string | null; bare: boolean } = {
    branch: null,
    bare: false,
  };
  for (const field of text.split('\0')) {
    if (field === '') {
      if (current.path !== undefined && current.head !== undefined && !current.bare)
        list.push({ path: realOrSelf(current.path), head: current.head, branch: current.branch });
      current = { branch: null, bare: false };
      continue;
    }
    const space = field.indexOf(' ');
    const key = space === -1 ? field : field.slice(0, space);
    const value = space === -1 ? '' : field.slice(space + 1);
    if (key === 'worktree') current.path = value;
    else if (key === 'HEAD') current.head = value;
    else if (key === 'branch') current.branch = value.replace(/^refs\/heads\//, '');
    else if (key === 'bare') current.bare = true;
  }
  return list;
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** The base: --base as given (must name a commit), else origin's default branch, else main or master. */
async function findBase(
  given: string | undefined,
  root: string,
  env: Env,
): Promise<{ name: string; head: string } | null> {
  const resolve = async (name: string) => {
    const { code, stdout } = await git(['rev-parse', '--verify', '-q', `${name}^{commit}`], root, env);
    return code === 0 ? stdout.trim() : null;
  };
  if (given !== undefined) {
    if (given.trim() === '' || given.startsWith('-'))
      throw usage(
        `--base ${JSON.stringify(given)} is not a branch name`,
        'pass --base with an existing branch',
      );
    const head = await resolve(given);
    if (head === null)
      throw usage(
        `base branch ${given} was not found`,
        'pass --base with an existing branch, or leave it out',
      );
    return { name: given, head };
  }
  const origin = await git(['symbolic-ref', '-q', '--short', 'refs/remotes/origin/HEAD'], root, env);
  const candidates = origin.code === 0 && origin.stdout.trim() ? [origin.stdout.trim()] : [];
  candidates.push('main', 'master');
  for (const name of candidates) {
    const head = await resolve(name);
    if (head !== null) return { name, head };
  }
  return null;
}

type Cache = Record<string, string[]>;

function readCache(file: string): Cache {
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
    const entries = (value as { entries?: unknown }).entries;
    if (typeof entries !== 'object' || entries === null) return {};
    const cache: Cache = {};
    for (const [key, files] of Object.entries(entries)) {
      if (Array.isArray(files) && files.every((f) => typeof f === 'string')) cache[key] = files;
    }
    return cache;
  } catch {
    // A cache, not the store: unreadable means recompute.
    return {};
  }
}

function writeCache(file: string, cache: Cache): void {
  const keys = Object.keys(cache);
  const kept = Object.fromEntries(keys.slice(-CACHE_LIMIT).map((k) => [k, cache[k]]));
  const temp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, JSON.stringify({ version: 1, entries: kept }), { mode: 0o600 });
    renameSync(temp, file);
  } catch {
    // Not writing the cache only costs the next run the merges again.
    rmSync(temp, { force: true });
  }
}

/** Files `git merge-tree` finds conflicting between two commits, merged in memory only. */
async function mergeConflicts(
  ours: string,
  theirs: string,
  root: string,
  commonDir: string,
  env: Env,
): Promise<string[]> {
  // Objects the merge writes (blobs with conflict markers, trees) go to a throw-away folder.
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'alock-merge-'));
  try {
    const { code, stdout, stderr } = await git(
      ['merge-tree', '--write-tree', '--name-only', '--no-messages', '-z', ours, theirs],
      root,
      {
        ...env,
        GIT_OBJECT_DIRECTORY: scratch,
        GIT_ALTERNATE_OBJECT_DIRECTORIES: path.join(commonDir, 'objects'),
      },
    );
    if (code === 0) return [];
    if (code !== 1)
      throw new AgentLockError('E_USAGE', `git merge-tree failed: ${firstLine(stderr) || `exit ${code}`}`, {
        hint: 'check the repository with git status',
      });
    // The tree's id, then one name per conflicting path (a path can be named once per stage).
    const names = stdout
      .split('\0')
      .slice(1)
      .filter((name) => name !== '');
    return [...new Set(names)];
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function holdersOf(locks: readonly Lock[], worktree: string | null, file: string): Lock[] {
  if (worktree === null) return [];
  const scope = scopeFromPattern(file, 'path');
  return locks.filter(
    (l) =>
      l.kind === 'path' &&
      (l.worktree ?? l.tree) === worktree &&
      scopesOverlap(scopeFromPattern(l.scope, 'path'), scope),
  );
}

export async function conflictsCommand(cli: Cli, opts: { base?: string }): Promise<Answer> {
  const env = cli.io.env;
  const start = path.resolve(cli.io.cwd, cli.globals().dir ?? '.');
  const tree = findTree(start);
  if (tree.gitCommonDir === null)
    throw usage(
      `${start} is not inside a git repository`,
      'run conflicts inside a git worktree, or pass --dir',
    );
  // Independent git calls, run side by side (each is a process start); their errors are told in
  // the order a person would fix them: git itself, then the worktree, then the base.
  const [version, listing, based] = await Promise.allSettled([
    checkGitVersion(tree.root, env),
    git(['worktree', 'list', '--porcelain', '-z'], tree.root, env),
    findBase(opts.base, tree.root, env),
  ]);
  if (version.status === 'rejected') throw version.reason;
  if (listing.status === 'rejected') throw listing.reason;
  const listed = listing.value;
  if (listed.code !== 0)
    throw usage(
      `git worktree list failed: ${firstLine(listed.stderr)}`,
      'check the repository with git status',
    );
  const worktrees = parseWorktrees(listed.stdout);
  const here = worktrees.find((w) => w.path === tree.root);
  if (here === undefined)
    throw usage(`${tree.root} is not a worktree git lists`, 'run git worktree prune, then try again');
  if (here.branch === null)
    throw usage(
      `${tree.root} has a detached HEAD: there is no branch to predict merges for`,
      'check out a branch (git switch NAME) first',
    );
  if (based.status === 'rejected') throw based.reason;
  const base = based.value;

  // The other sides: each other worktree's branch, and the base (shown as such when one has it).
  const sides = new Map<string, { branch: string; worktree: string | null; head: string; base: boolean }>();
  for (const w of worktrees) {
    if (w === here || w.branch === here.branch) continue;
    const branch = w.branch ?? `(detached ${w.head.slice(0, 12)})`;
    sides.set(branch, { branch, worktree: w.path, head: w.head, base: false });
  }
  if (base !== null && base.name !== here.branch) {
    const known = sides.get(base.name);
    if (known) sides.set(base.name, { ...known, base: true, head: base.head });
    else sides.set(base.name, { branch: base.name, worktree: null, head: base.head, base: true });
  }

  const locks = (await (await cli.open()).list()).locks.filter((l) => l.status === 'active');
  const cacheFile = path.join(storeDirFor(tree, env), CACHE_FILE);
  const cache = readCache(cacheFile);
  let changed = false;
  const pairs: PairResult[] = await Promise.all(
    [...sides.values()].map(async (side) => {
      const key = `${here.head} ${side.head}`;
      const hit = cache[key];
      const files = hit ?? (await mergeConflicts(here.head, side.head, tree.root, tree.gitCommonDir!, env));
      if (hit === undefined) {
        cache[key] = files;
        changed = true;
      }
      return {
        ...side,
        cached: hit !== undefined,
        conflicts: files.map((file) => ({
          file,
          ours: holdersOf(locks, here.path, file),
          theirs: holdersOf(locks, side.worktree, file),
        })),
      };
    }),
  );
  if (changed) writeCache(cacheFile, cache);
  return conflictsAnswer(cli, here, base?.name ?? null, pairs);
}

function who(locks: readonly Lock[]): string {
  if (locks.length === 0) return 'no lock';
  return locks
    .map((l) => `${l.agent_id}${l.intent ? ` ${JSON.stringify(l.intent)}` : ''} (${l.scope})`)
    .join(', ');
}

function conflictsAnswer(cli: Cli, here: Worktree, base: string | null, pairs: PairResult[]): Answer {
  const branch = here.branch!;
  const conflicting = pairs.filter((p) => p.conflicts.length > 0);
  const files = new Set(conflicting.flatMap((p) => p.conflicts.map((c) => c.file)));
  const label = (p: PairResult) =>
    `${p.branch}${p.base ? ' (base)' : ''}${p.worktree ? ` in ${p.worktree}` : ''}`;
  const status = conflicting.length > 0 ? 'conflicting' : 'clear';
  const text: string[] = [];
  if (pairs.length === 0) {
    const baseSaid = base === null ? 'no base branch' : `the base is ${branch} itself`;
    text.push(
      cli.head('clear', `${branch}: nothing to compare with (no other worktree on a branch; ${baseSaid})`),
    );
  } else if (conflicting.length === 0) {
    text.push(
      cli.head('clear', `${branch}: no merge conflict predicted with ${pairs.map(label).join(', ')}`),
    );
  } else {
    text.push(
      cli.head(
        'conflicting',
        `${branch}: ${files.size} ${files.size === 1 ? 'file' : 'files'} would conflict with ${conflicting.length} of ${pairs.length} ${pairs.length === 1 ? 'branch' : 'branches'}`,
      ),
    );
    for (const pair of pairs) {
      if (pair.conflicts.length === 0) {
        text.push(`  with ${label(pair)}: clear`);
        continue;
      }
      text.push(`  with ${label(pair)}:`);
      for (const c of pair.conflicts)
        text.push(`    ${quoteArg(c.file)}  here: ${who(c.ours)} · there: ${who(c.theirs)}`);
    }
    text.push('next: agree who merges first, or rebase one branch onto the other before both go further');
  }
  if (base === null) text.push('  (no base branch found: pass --base BRANCH to compare with one)');
  return {
    command: 'conflicts',
    status,
    exitCode: status === 'clear' ? 0 : 1,
    locks: [],
    conflicts: [],
    message:
      status === 'clear'
        ? `clear: no merge conflict predicted for ${branch}`
        : `conflicting: ${[...files].join(' ')}`,
    text,
    extra: { branch, worktree: here.path, head: here.head, base, pairs },
  };
}
