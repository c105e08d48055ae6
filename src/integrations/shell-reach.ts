/**
 * Could a shell command reach a held file at all? Asked before the full shell grammar is loaded, of
 * a command the light reader could not read: every file the grammar would find the command writes
 * is named by some word of it (the file, a folder above it, a `cd` on the way, a glob), or the
 * command is one of the few that write a whole folder without naming it (`git checkout main`, `tar
 * x`, `find -delete`, `xargs rm`). So when no word, read as a path, meets a held scope and none of
 * those programs appears, no reading of the command can find a held file in it, and the grammar
 * stays unloaded. The test is loose on purpose (it also reads the code of `python3 -c '...'`); it
 * never says no where the grammar would find a held file.
 */
import path from 'node:path';
import { isGlob, scopeFromPattern, scopesOverlap } from '../core/scope.js';
import { ansiC } from './shell-reader.js';

/**
 * Programs that write a folder's files without naming them, and `ln`, whose link is read from the
 * link's own folder: the grammar must read the command.
 */
const WHOLE_FOLDER = /(^|[^A-Za-z0-9_.-])(tar|gtar|bsdtar|unzip|find|xargs|patch|ln)([^A-Za-z0-9_.-]|$)/;
/**
 * git, with one of the subcommands that rewrite files of the work tree somewhere in the command
 * (`git commit -m "$(cat <<EOF ...)"`, the commit every agent makes, has none).
 */
const GIT = /(^|[^A-Za-z0-9_.-])git([^A-Za-z0-9_.-]|$)/;
const GIT_REWRITES =
  /(^|[^A-Za-z0-9_.-])(checkout|switch|merge|pull|cherry-pick|rebase|revert|am|apply|bisect|stash|reset|clean|read-tree|checkout-index|restore|rm|mv|submodule)([^A-Za-z0-9_.-]|$)/;

/** Places no lock can be in (devices, the kernel's files, system programs). */
const NOWHERE = /^\/(dev|proc|sys|usr\/bin|usr\/sbin|bin|sbin)(\/|$)/;

export interface ReachFacts {
  readonly home?: string | undefined;
  /** The real path of `absolute` (symlinks resolved for the part that exists). */
  readonly realpath: (absolute: string) => string;
  readonly isDirectory: (absolute: string) => boolean;
  /** Is `absolute`, outside the tree, in a git checkout (where it could be locked)? */
  readonly inCheckout: (absolute: string) => boolean;
}

/** What a command's words reach: a held scope by name, or a place outside the tree. */
export type Reach =
  | { readonly kind: 'none' }
  | { readonly kind: 'held'; readonly scope: string; readonly word: string }
  | { readonly kind: 'outside'; readonly word: string }
  /** A whole-folder writer, or a `..` read from a folder a `cd` may have moved to. */
  | { readonly kind: 'unsure'; readonly word: string };

/** Does the path `rel` (relative to the tree root; a folder stands for what is below it) meet `scope`? */
export function pathMeetsScope(rel: string, scope: string, isDirectory: () => boolean): boolean {
  if (rel === '') return true;
  const held = scopeFromPattern(scope, 'path');
  if (held.kind !== 'path') return false;
  const segments = rel.split('/');
  const shared = Math.min(segments.length, held.fixed.length);
  for (let i = 0; i < shared; i++) {
    if (segments[i] !== held.fixed[i] && !isGlob(segments[i]!)) return false;
  }
  // A folder above the held scope (or the scope itself).
  if (segments.length <= held.fixed.length) return true;
  if (!held.glob) return false;
  if (isGlob(rel)) return true;
  const word = scopeFromPattern(rel, 'path');
  return (
    scopesOverlap(word, held) || (isDirectory() && scopesOverlap(scopeFromPattern(`${rel}/**`, 'path'), held))
  );
}

/**
 * The first word of `command` (run in `cwd`, inside the tree at `root`) that reaches one of `held`
 * (scope patterns relative to `root`) or a place outside the tree, or a whole-folder writer.
 */
export function wordsReach(
  command: string,
  cwd: string,
  root: string,
  held: readonly string[],
  facts: ReachFacts,
): Reach {
  // Quotes and escapes joined away, as the shell would (`"src"/'a.ts'`, `r\m`, `$'a.ts'`).
  const plain = command
    .replace(/\$'((?:[^'\\]|\\.)*)'/gs, (_, body: string) => ansiC(body))
    .replace(/\\\n/g, '')
    .replace(/["'\\]/g, '');
  if (held.length > 0) {
    // Nothing held here: only a word outside the tree (another checkout) matters.
    const program = WHOLE_FOLDER.exec(plain);
    if (program !== null) return { kind: 'unsure', word: program[2]! };
    const git = GIT.test(plain) ? GIT_REWRITES.exec(plain) : null;
    if (git !== null) return { kind: 'unsure', word: `git ${git[2]}` };
  }
  for (const token of plain.split(/[\s;&|()<>`,=:{}[\]]+/)) {
    if (token === '' || token.includes('$') || token.startsWith('//')) continue;
    // After a `cd`, `..` is read from a folder no word here names.
    if (held.length > 0 && /(^|\/)\.\.(\/|$)/.test(token)) return { kind: 'unsure', word: token };
    const word = facts.home !== undefined && /^~(\/|$)/.test(token) ? facts.home + token.slice(1) : token;
    const lexical = path.resolve(cwd, word);
    let physical = lexical;
    try {
      physical = facts.realpath(lexical);
    } catch {
      // A path that cannot be resolved is read as written.
    }
    for (const absolute of new Set([lexical, physical])) {
      if (NOWHERE.test(absolute)) continue;
      const rel = path.relative(root, absolute);
      if (rel.startsWith('..') || path.isAbsolute(rel)) {
        if (facts.inCheckout(absolute)) return { kind: 'outside', word: token };
        continue;
      }
      for (const scope of held) {
        if (pathMeetsScope(rel, scope, () => facts.isDirectory(absolute)))
          return { kind: 'held', scope, word: token };
      }
    }
  }
  return { kind: 'none' };
}
