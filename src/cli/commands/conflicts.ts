/**
 * `alock conflicts [--base BRANCH]`: which files would conflict if this worktree's branch were merged
 * with every other worktree's branch (and the base), and who holds locks on them on both sides.
 * Git's side (worktrees, the base, `git merge-tree` in memory, the cache) is host/git.ts; this
 * command pairs its answers with the store's locks. It changes nothing.
 */
import path from 'node:path';
import type { Answer } from '../../answers/answer.js';
import { quoteArg } from '../../answers/render.js';
import { AgentLockError } from '../../core/errors.js';
import type { Lock } from '../../core/lock.js';
import { scopeFromPattern, scopesOverlap } from '../../core/scope.js';
import type { Worktree } from '../../host/git.js';
import { findTree, storeDirFor } from '../../host/tree.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import type { Cli } from '../context.js';

const FLAGS = [
  { flags: '--base <branch>', description: "the base branch (default: the repository's default branch)" },
] as const satisfies readonly FlagSpec[];

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

function usage(message: string, hint: string): AgentLockError {
  return new AgentLockError('E_USAGE', message, { hint });
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

async function predictConflicts(cli: Cli, opts: OptionsOf<typeof FLAGS>): Promise<Answer> {
  // The git plumbing is a bundle of its own, loaded only by this command.
  const git = await import('../../host/git.js');
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
    git.checkGitVersion(tree.root, env),
    git.listWorktrees(tree.root, env),
    git.findBase(opts.base, tree.root, env),
  ]);
  if (version.status === 'rejected') throw version.reason;
  if (listing.status === 'rejected') throw listing.reason;
  const worktrees = listing.value;
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
  const cacheFile = path.join(storeDirFor(tree, env), git.MERGE_CACHE_FILE);
  const cache = git.readMergeCache(cacheFile);
  let changed = false;
  const pairs: PairResult[] = await Promise.all(
    [...sides.values()].map(async (side) => {
      const key = `${here.head} ${side.head}`;
      const hit = cache[key];
      const files =
        hit ?? (await git.mergeConflicts(here.head, side.head, tree.root, tree.gitCommonDir!, env));
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
  if (changed) git.writeMergeCache(cacheFile, cache);
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

export const conflictsCommand = defineCommand({
  name: 'conflicts',
  args: '',
  summary:
    "predict merge conflicts between this worktree's branch and every other worktree's branch and the base (git merge-tree; changes nothing)",
  flags: FLAGS,
  run: (cli, o) => predictConflicts(cli, o),
});
