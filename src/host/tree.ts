/**
 * Where the caller works (its tree) and where the locks live (its store), found without running
 * git: walking up to `.git` is a few stat calls, a `git rev-parse` would cost the CLI ~5 ms.
 */
import { lstatSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PathProbe } from '../core/scope.js';
import { sha256Hex } from '../core/sha256.js';

export interface TreeInfo {
  /** Real path of the tree root. */
  readonly root: string;
  /** The repository's common git dir (shared by its worktrees), when inside git. */
  readonly gitCommonDir: string | null;
  /** This worktree's own git dir (`.git`, or `.git/worktrees/NAME` of a linked worktree). */
  readonly gitDir?: string | null;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** `gitdir: X` in a worktree's `.git` file; `commondir` inside that points at the shared dir. */
function gitDirsOf(dotGit: string): { common: string; own: string } | null {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = statSync(dotGit);
  } catch {
    return null;
  }
  if (stat.isDirectory()) return { common: dotGit, own: dotGit };
  if (!stat.isFile()) return null;
  const text = readFileSync(dotGit, 'utf8');
  const match = /^gitdir:\s*(.+)\s*$/m.exec(text);
  if (!match?.[1]) return null;
  const gitDir = path.resolve(path.dirname(dotGit), match[1].trim());
  try {
    const common = readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim();
    return { common: path.resolve(gitDir, common), own: gitDir };
  } catch {
    return { common: gitDir, own: gitDir };
  }
}

/**
 * The branch checked out in a worktree, from its own `HEAD` (one small read, no git process);
 * null on a detached HEAD or when HEAD cannot be read.
 */
export function headBranch(gitDir: string): string | null {
  try {
    const head = readFileSync(path.join(gitDir, 'HEAD'), 'utf8');
    const match = /^ref:\s*refs\/heads\/(.+?)\s*$/m.exec(head);
    return match?.[1] ?? null;
  } catch {
    return null;
  }
}

export function findTree(start: string): TreeInfo {
  const real = realpathSync(start);
  let current = real;
  for (;;) {
    const dirs = gitDirsOf(path.join(current, '.git'));
    if (dirs !== null)
      return { root: current, gitCommonDir: realOrSelf(dirs.common), gitDir: realOrSelf(dirs.own) };
    const parent = path.dirname(current);
    if (parent === current) return { root: real, gitCommonDir: null, gitDir: null };
    current = parent;
  }
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** Store folder of the file backend, by the contract's precedence. */
export function storeDirFor(tree: TreeInfo, env: Readonly<Record<string, string | undefined>>): string {
  const explicit = env.AGENT_LOCK_DIR;
  // A relative one is read from the tree's root, not from wherever the agent happens to stand:
  // agents started in different folders of one checkout must not split into different stores.
  if (explicit !== undefined && explicit !== '') return path.resolve(tree.root, explicit);
  if (tree.gitCommonDir !== null) return path.join(tree.gitCommonDir, 'agent-locks');
  const digest = sha256Hex(tree.root).slice(0, 12);
  return path.join(env.HOME || os.homedir(), '.agent-locks', digest);
}

function realpathPartial(absolute: string, depth: number): string {
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      const real = realpathSync(current);
      return rest.length === 0 ? real : path.join(real, ...rest.reverse());
    } catch {
      // A dangling symlink does not exist for realpath, but writing through it lands at its
      // target: follow it by hand so that a link pointing outside the tree is still refused.
      const link = readlinkOrNull(current);
      if (link !== null && depth < 40) {
        const target = realpathPartial(path.resolve(path.dirname(current), link), depth + 1);
        return rest.length === 0 ? target : path.join(target, ...rest.reverse());
      }
      const parent = path.dirname(current);
      if (parent === current) return absolute;
      rest.push(path.basename(current));
      current = parent;
    }
  }
}

function readlinkOrNull(p: string): string | null {
  try {
    return lstatSync(p).isSymbolicLink() ? readlinkSync(p) : null;
  } catch {
    return null;
  }
}

/** No `//`, `.` or `..` part, and no trailing `/` (path.normalize keeps one). */
const tidy = (absolute: string) => !absolute.endsWith('/') && path.normalize(absolute) === absolute;

/** Is `root` still its own real path (no part of it moved, removed or swapped for a symlink)? */
function stillReal(root: string): boolean {
  try {
    return realpathSync.native(root) === root;
  } catch {
    return false;
  }
}

/**
 * The real path of `absolute`, which lies below `root` (a real path): only the components below the
 * root are looked at, one lstat each, where realpathPartial looks at every component from `/` and
 * again for each parent of a part that does not exist. Without symlinks below the root the real path
 * is the path itself up to the first part that is not there; a symlink met on the way, a path
 * outside the root or not tidy (`//`, `.`, `..`, a trailing `/`), and every path while the root is not
 * its own real path, take realpathPartial. `last` gets whether the final lstat saw a folder (nothing
 * there: no), so that the caller asking next whether that path is a folder needs no second call.
 */
function realpathBelow(absolute: string, root: string, last: { path: string; dir: boolean | null }): string {
  const prefix = root.endsWith('/') ? root : `${root}/`;
  // The long way for anything but a tidy path below a tree still at its real path: a tree moved or
  // swapped for a symlink since the store was opened is then judged as it is now (so a process of
  // before and one of after never name one file in two trees).
  if (!absolute.startsWith(prefix) || !tidy(absolute) || !stillReal(root)) {
    return realpathPartial(absolute, 0);
  }
  const parts = absolute.slice(prefix.length).split('/');
  let current = root;
  for (let i = 0; i < parts.length; i++) {
    const next = current === '/' ? `/${parts[i]}` : `${current}/${parts[i]}`;
    let stat: ReturnType<typeof lstatSync> | undefined;
    try {
      stat = lstatSync(next, { throwIfNoEntry: false });
    } catch {
      stat = undefined; // ENOTDIR, EACCES: not there as far as a path can say
    }
    if (stat === undefined) {
      if (i + 1 === parts.length) {
        last.path = next;
        last.dir = false;
      }
      return path.join(next, ...parts.slice(i + 1));
    }
    // Rare in a checkout: the long way, which this must answer exactly as.
    if (stat.isSymbolicLink()) return realpathPartial(absolute, 0);
    current = next;
    if (i + 1 === parts.length) {
      last.path = current;
      last.dir = stat.isDirectory();
    }
  }
  return current;
}

/** The file system as scope parsing sees it: real paths for what exists, the rest appended. */
export const fsProbe: PathProbe = (() => {
  // What realpathBelow's last lstat saw: parseScope asks isDirectory of that very path next, in the
  // same synchronous step. Answered once, and forgotten by the next realpath.
  const last: { path: string; dir: boolean | null } = { path: '', dir: null };
  return {
    realpath(absolute: string, root?: string): string {
      last.path = '';
      return root === undefined ? realpathPartial(absolute, 0) : realpathBelow(absolute, root, last);
    },
    isDirectory(absolute: string): boolean {
      if (last.path === absolute && last.dir !== null) {
        last.path = '';
        return last.dir;
      }
      return isDir(absolute);
    },
  };
})();

/**
 * The origin remote of a repository, normalised so that every clone of it agrees whatever the
 * protocol, user, port or case: `git@github.com:Org/Repo.git` and `https://u@github.com/org/repo/`
 * are both `github.com/org/repo` (folding case may merge two repositories into one namespace, the
 * safe side; splitting one in two would not be). Read from the common dir's `config` file (no git
 * process). A local path is made absolute. Null without an origin.
 */
export function originOf(gitCommonDir: string): string | null {
  let text: string;
  try {
    text = readFileSync(path.join(gitCommonDir, 'config'), 'utf8');
  } catch {
    return null;
  }
  let inOrigin = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('[')) inOrigin = /^\[remote\s+"origin"\]$/.test(line);
    else if (inOrigin) {
      const match = /^url\s*=\s*(.+)$/.exec(line);
      if (match?.[1])
        return normaliseRemote(match[1].trim().replace(/^"|"$/g, ''), path.dirname(gitCommonDir));
    }
  }
  return null;
}

export function normaliseRemote(url: string, base: string): string {
  let host: string;
  let rest: string;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  if (scheme && scheme[1]!.toLowerCase() !== 'file') {
    const after = url.slice(scheme[0].length).replace(/^[^@/]*@/, '');
    const slash = after.indexOf('/');
    // The port goes (`host:22`), not the colons of an IPv6 address in brackets.
    host = (slash === -1 ? after : after.slice(0, slash)).replace(/:\d*$/, '');
    rest = slash === -1 ? '' : after.slice(slash + 1);
  } else {
    // scp-like `user@host:path` (git reads what follows the colon as a path, digits included).
    const scp = scheme ? null : /^(?:[^@/]*@)?(\[[^\]]*\]|[^:/]+):(.*)$/.exec(url);
    if (!scp) return `path:${path.resolve(base, scheme ? url.slice(scheme[0].length) : url)}`;
    host = scp[1]!;
    rest = scp[2]!;
  }
  const tail = rest
    .split('/')
    .filter(Boolean)
    .join('/')
    .replace(/\.git$/i, '');
  return `${host}/${tail}`.toLowerCase();
}

/**
 * The Redis key prefix a new store of this repository takes: its own namespace, so that two
 * unrelated repositories that find one server never see each other's locks. Derived from what every
 * clone of the repository shares: its origin; else AGENT_LOCK_TREE (the name clones set to share
 * paths); else the repository's common dir (all its worktrees), else the tree.
 */
export function repositoryPrefix(tree: TreeInfo, treeName: string | null): string {
  const origin = tree.gitCommonDir === null ? null : originOf(tree.gitCommonDir);
  const identity = origin ?? (treeName !== null ? `tree:${treeName}` : (tree.gitCommonDir ?? tree.root));
  const name =
    (
      origin ??
      treeName ??
      path.basename(tree.gitCommonDir === null ? tree.root : path.dirname(tree.gitCommonDir))
    )
      .split('/')
      .filter(Boolean)
      .at(-1) ?? 'repo';
  const slug = name.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 32) || 'repo';
  const digest = sha256Hex(identity).slice(0, 10);
  return `agent-lock:${slug}-${digest}`;
}
