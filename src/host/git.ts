/**
 * Git plumbing for `alock conflicts`: the git it needs, the worktrees git lists, the base branch,
 * and the files `git merge-tree` finds conflicting between two commits, cached in the store folder.
 *
 * Read-only by construction: `git merge-tree --write-tree` (git 2.38+) merges in memory and touches
 * no worktree, index or ref; the objects it must write go to a temporary object folder (the
 * repository's own objects are read as an alternate), so not even the object store grows. Results
 * are cached by the pair of commits merged: they hold while no branch head moves.
 * Loaded only by that command (a bundle of its own).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentLockError } from '../core/errors.js';

/** The first git with `merge-tree --write-tree`. */
const MIN_GIT = [2, 38] as const;
/** In the store folder: merges already computed, by the pair of commits. */
export const MERGE_CACHE_FILE = 'conflicts-cache.json';
const CACHE_LIMIT = 256;

export interface Worktree {
  readonly path: string;
  readonly head: string;
  /** Short branch name; null on a detached HEAD. */
  readonly branch: string | null;
}

export type Env = Readonly<Record<string, string | undefined>>;

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

export async function checkGitVersion(cwd: string, env: Env): Promise<void> {
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

/** The worktrees git lists for the repository at `root` (bare ones left out), real paths. */
export async function listWorktrees(root: string, env: Env): Promise<Worktree[]> {
  const listed = await git(['worktree', 'list', '--porcelain', '-z'], root, env);
  if (listed.code !== 0)
    throw usage(
      `git worktree list failed: ${firstLine(listed.stderr)}`,
      'check the repository with git status',
    );
  return parseWorktrees(listed.stdout);
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
export async function findBase(
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

export type MergeCache = Record<string, string[]>;

export function readMergeCache(file: string): MergeCache {
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
    const entries = (value as { entries?: unknown }).entries;
    if (typeof entries !== 'object' || entries === null) return {};
    const cache: MergeCache = {};
    for (const [key, files] of Object.entries(entries)) {
      if (Array.isArray(files) && files.every((f) => typeof f === 'string')) cache[key] = files;
    }
    return cache;
  } catch {
    // A cache, not the store: unreadable means recompute.
    return {};
  }
}

export function writeMergeCache(file: string, cache: MergeCache): void {
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
export async function mergeConflicts(
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
