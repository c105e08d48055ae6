/**
 * `acquire --enforce`: make the files a lock covers read-only, and put them back. Only regular files
 * are touched (never a symlink, never anything under .git/), and the exact prior mode is recorded in
 * the lock before a file is changed, so a holder killed at any point leaves nothing that the next
 * decision cannot restore.
 */
import { createRequire } from 'node:module';
import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { FrozenFile, Outcome, Target } from '../core/decide.js';
import type { Warning } from '../core/decisions/outcomes.js';
import { globMatches } from '../core/scope.js';

export const W_ENFORCE_AS_ROOT = 'W_ENFORCE_AS_ROOT';

/**
 * Root (uid 0) writes through read-only modes, so `--enforce` taken as root stops neither the
 * holder's own tools nor any other process running as root: said beside the answer, not hidden.
 */
export function enforceAsRootWarning(): Warning | null {
  if (process.getuid?.() !== 0) return null;
  return {
    code: W_ENFORCE_AS_ROOT,
    message:
      'running as root (uid 0): root writes through read-only modes, so the frozen files stop only processes of other users; run agents as an ordinary user for --enforce to hold',
  };
}

/** The outcome with the root warning added when files were frozen by a process running as root. */
export function withEnforceAsRoot<O extends Outcome<string>>(outcome: O, enforce: boolean): O {
  if (!enforce || outcome.status !== 'acquired') return outcome;
  const warning = enforceAsRootWarning();
  return warning === null ? outcome : { ...outcome, warnings: [...(outcome.warnings ?? []), warning] };
}

function regularMode(file: string): number | null {
  try {
    const stat = lstatSync(file);
    return stat.isFile() ? stat.mode & 0o7777 : null;
  } catch {
    return null;
  }
}

/** The regular files a scope matches now, below the tree root, with their current modes. */
export function filesToFreeze(target: Target, root: string): FrozenFile[] {
  const scope = target.scope;
  if (scope.kind === 'resource') return [];
  if (scope.pattern.split('/').includes('.git')) return [];
  if (!scope.glob) {
    const file = path.join(root, scope.pattern);
    const mode = regularMode(file);
    return mode === null ? [] : [{ path: file, mode }];
  }
  const found: FrozenFile[] = [];
  const walk = (dir: string) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      // `.git` is a folder in a clone and a file in a linked worktree: neither is ever touched.
      if (entry.name === '.git') continue;
      if (entry.isDirectory()) {
        walk(full);
      } else if (entry.isFile() && globMatches(scope, path.relative(root, full).split(path.sep).join('/'))) {
        found.push({ path: full, mode: regularMode(full) ?? 0o644 });
      }
    }
  };
  walk(path.join(root, ...scope.fixed));
  return found;
}

const onMac = process.platform === 'darwin';
function chflags(flag: 'uchg' | 'nouchg', files: string[]): void {
  if (!onMac || files.length === 0) return;
  const cp = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  cp.execFileSync('chflags', [flag, ...files]);
}

export function freeze(files: readonly FrozenFile[]): void {
  for (const file of files) {
    try {
      chmodSync(file.path, file.mode & ~0o222);
    } catch {
      // Gone since it was listed: nothing to protect.
    }
  }
  chflags(
    'uchg',
    files.map((f) => f.path),
  );
}

/** Restores each file's recorded mode; a file that is gone or replaced by a symlink is left alone. */
export function thaw(files: readonly FrozenFile[]): void {
  const present = files.filter((f) => regularMode(f.path) !== null);
  try {
    chflags(
      'nouchg',
      present.map((f) => f.path),
    );
  } catch {
    // Best effort: the mode below is what Linux relies on.
  }
  for (const file of present) {
    try {
      chmodSync(file.path, file.mode);
    } catch {
      // Not ours to change (another user's file): leave it.
    }
  }
}
