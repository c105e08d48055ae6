import { createRequire } from 'node:module';
import path from 'node:path';
import type picomatchType from 'picomatch';
import { AgentLockError } from './errors.js';
import { globsOverlap } from './glob-overlap.js';

/** A file, folder or glob inside one tree, normalised relative to the tree root. */
export interface PathScope {
  readonly kind: 'path';
  /** Normalised pattern relative to the tree root, e.g. `src/a.ts`, `src/**`, `**`. */
  readonly pattern: string;
  readonly glob: boolean;
  /** Leading segments without a wildcard; `[]` for `**` or a glob starting with one. */
  readonly fixed: readonly string[];
}

/** A named resource such as `@merge`; it belongs to the store, not to a tree. */
export interface ResourceScope {
  readonly kind: 'resource';
  /** `@` plus the name. */
  readonly pattern: string;
}

export type Scope = PathScope | ResourceScope;

/** What parsing needs to know about the file system; the host supplies it, tests fake it. */
export interface PathProbe {
  /**
   * The real path of `absolute`: symlinks resolved for the part that exists, the rest appended.
   * `root`, the tree's real path: a probe may take it as resolved and look only below it.
   */
  realpath(absolute: string, root?: string): string;
  isDirectory(absolute: string): boolean;
}

export interface ScopeContext {
  /** Folder that relative scopes start from (the current folder or `--dir`). */
  readonly cwd: string;
  /** Real path of the tree root. */
  readonly root: string;
  readonly probe: PathProbe;
}

const WILDCARD = /[*?[{]/;
const RESOURCE_NAME = /^[^\s\p{C}]{1,200}$/u;
const CONTROL = /[\p{Cc}]/u;
export const MAX_RESOURCE_NAME = 200;

export function isGlob(text: string): boolean {
  return WILDCARD.test(text);
}

/**
 * A path as git names it (the guard's staged files), shaped like a stored record's scope so that
 * both sides are judged alike. Control characters are matched as U+FFFD: picomatch's `**` is built
 * on a regex `.`, which never matches a newline, so `src/a\nb.ts` would otherwise escape a lock on
 * `src/**`. No lock can name a control character (parseScope refuses them), so only wildcards meet
 * these names, and to a wildcard any one character is alike.
 */
export function stagedPathScope(p: string): PathScope {
  return scopeFromPattern(p.replace(/\p{Cc}/gu, '\uFFFD'), 'path') as PathScope;
}

/**
 * `p` read from the folder `base` as the file system reads it: each `..` leaves the folder the path
 * has reached with its symlinks followed, so `link/../x` lies beside the link's target, not beside
 * the link (path.resolve would say the latter, and name another file than the one written). Without
 * a `..` part, path.resolve.
 */
export function resolveAsFileSystem(base: string, p: string, realpath: (absolute: string) => string): string {
  const parts = (path.isAbsolute(p) ? p : `${base}/${p}`).split('/');
  if (!parts.includes('..')) return path.resolve(base, p);
  let at = '/';
  for (const part of parts) {
    if (part === '' || part === '.') continue;
    at = part === '..' ? path.dirname(realpath(at)) : path.join(at, part);
  }
  return at;
}

export function parseScope(input: string, ctx: ScopeContext): Scope {
  if (input.trim() === '') {
    throw new AgentLockError('E_SCOPE_EMPTY', 'empty scope: pass ** to claim the whole tree', {
      hint: 'or name a file, a folder, a glob or an @resource',
    });
  }
  if (input.startsWith('@')) return parseResource(input);
  if (CONTROL.test(input)) {
    throw new AgentLockError(
      'E_SCOPE_INVALID',
      `scope ${JSON.stringify(input)} contains a control character`,
      { hint: 'name the path without control characters' },
    );
  }
  // A lone `*` means "everything here", like `.`: the contract makes `.`, `*` and `**` equal at the root.
  const text = input === '*' ? '.' : input;
  const segments = text.split('/');
  const firstWild = segments.findIndex((segment) => isGlob(segment));
  const fixedRaw = firstWild === -1 ? segments : segments.slice(0, firstWild);
  const rest = firstWild === -1 ? [] : segments.slice(firstWild).filter((s) => s !== '' && s !== '.');
  // `..` after a wildcard, also as a brace alternative (`{..,x}`), could climb out of the fixed part.
  if (rest.some((segment) => segment === '..' || /(^|[{,])\.\.([,}]|$)/.test(segment))) {
    throw new AgentLockError('E_SCOPE_INVALID', `scope ${input}: '..' after a wildcard is not allowed`, {
      hint: 'put .. before the wildcard, e.g. ../docs/**',
    });
  }
  const realpath = (absolute: string) => ctx.probe.realpath(absolute, ctx.root);
  const resolved = resolveAsFileSystem(ctx.cwd, fixedRaw.join('/') || '.', realpath);
  const real = realpath(resolved);
  if (real !== ctx.root && !real.startsWith(ctx.root.endsWith('/') ? ctx.root : `${ctx.root}/`)) {
    // Spelled inside, it leaves through a symlink: say where to, or the refusal looks wrong.
    const spelled = path.resolve(ctx.cwd, fixedRaw.join('/') || '.');
    const via = real === spelled ? '' : ` (a symlink on the way leads to ${real})`;
    throw new AgentLockError('E_SCOPE_OUTSIDE_TREE', `${input} is outside the tree ${ctx.root}${via}`, {
      hint: 'claim a path inside the tree, or pass --dir',
    });
  }
  const rel = path.relative(ctx.root, real);
  const relSegments = rel === '' ? [] : rel.split(path.sep);
  return checkedPath(input, pathScope(text, rest, rel, relSegments, real, ctx));
}

function pathScope(
  text: string,
  rest: readonly string[],
  rel: string,
  relSegments: readonly string[],
  real: string,
  ctx: ScopeContext,
): Scope {
  // The scope is rebuilt from its final text, exactly as stored records are (scopeFromPattern), so a
  // folder whose real name holds a wildcard character (`app/[slug]`) is judged the same way on both
  // sides of every comparison: as a glob there, which may over-refuse but never under-refuses.
  if (rest.length > 0) return scopeFromPattern([...relSegments, ...rest].join('/') || '**', 'path');
  // A plain path: the tree itself and existing folders become globs over everything below them.
  const folderMeant = rel === '' || text.endsWith('/') || ctx.probe.isDirectory(real);
  if (folderMeant) return scopeFromPattern(rel === '' ? '**' : `${rel.split(path.sep).join('/')}/**`, 'path');
  return scopeFromPattern(relSegments.join('/'), 'path');
}

/** The longest path scope a store keeps, and the longest name of one file or folder in it. */
export const MAX_PATH_SCOPE = 4096;
export const MAX_PATH_SEGMENT = 255;
const utf8 = new TextEncoder();

/**
 * What no path scope may be, once normalised: inside git's own folder (its files are git's, and a
 * lock there would freeze or guard them), or longer than any path a file system has.
 */
function checkedPath(input: string, scope: Scope): Scope {
  if (scope.kind !== 'path') return scope;
  const segments = scope.pattern.split('/');
  if (segments.includes('.git')) {
    throw new AgentLockError('E_SCOPE_INVALID', `scope ${input} is inside .git/, which belongs to git`, {
      hint: 'claim the files of the work tree, or an @resource such as @git/index for git operations',
    });
  }
  // The glob dialect reads `[!a]` as the class of `!` and `a`, where a shell user means "not a":
  // `src/[!a].ts` would hold src/a.ts and leave src/b.ts free. Refused, with the spelling that works.
  if (scope.glob && scope.pattern.includes('[!')) {
    throw new AgentLockError('E_SCOPE_INVALID', `scope ${input}: [!...] is not a negated class here`, {
      hint: 'write [^...] for "any character but", e.g. src/[^a].ts',
    });
  }
  // Three stars in a row are no glob of their own: picomatch then reads a later `.` as any character
  // (`x/***.d.ts` matches `x/y.d/ts`), which no agent means. Refused rather than followed.
  if (scope.glob && scope.pattern.includes('***')) {
    throw new AgentLockError('E_SCOPE_INVALID', `scope ${input}: *** is not a glob here`, {
      hint: 'write * for any name within a folder, or ** for any folders, e.g. src/**/*.ts',
    });
  }
  const long = segments.find((segment) => utf8.encode(segment).length > MAX_PATH_SEGMENT);
  if (scope.pattern.length > MAX_PATH_SCOPE || long !== undefined) {
    const why =
      long !== undefined
        ? `has a name longer than ${MAX_PATH_SEGMENT} bytes`
        : `is longer than ${MAX_PATH_SCOPE} characters`;
    throw new AgentLockError('E_SCOPE_INVALID', `scope ${input.slice(0, 60)}... ${why}`, {
      hint: 'name a shorter path, or a folder or glob above it',
    });
  }
  return scope;
}

export function parseResource(input: string): ResourceScope {
  const name = input.slice(1);
  if (!RESOURCE_NAME.test(name)) {
    const why =
      name.length === 0
        ? 'has no name'
        : name.length > MAX_RESOURCE_NAME
          ? `is longer than ${MAX_RESOURCE_NAME} characters`
          : 'must be printable, without whitespace';
    throw new AgentLockError('E_RESOURCE_INVALID', `resource ${JSON.stringify(input)} ${why}`, {
      hint: 'name resources like @merge or @review/pr-123',
    });
  }
  return { kind: 'resource', pattern: input };
}

/**
 * Rebuilds a scope from its stored pattern (records keep only the pattern). Stored patterns are
 * already normalised, so no file system is consulted.
 */
export function scopeFromPattern(pattern: string, kind: Scope['kind']): Scope {
  // The kind comes from the record, never from the text: `./@merge` is a path named `@merge`.
  if (kind === 'resource') return { kind: 'resource', pattern };
  const segments = pattern.split('/');
  const firstWild = segments.findIndex((segment) => isGlob(segment));
  if (firstWild === -1) return { kind: 'path', pattern, glob: false, fixed: segments };
  return { kind: 'path', pattern, glob: true, fixed: segments.slice(0, firstWild) };
}

// Extglobs and negation are off so that the fixed part really is a literal prefix of every match:
// `!src/**` or `@(a|b)` would otherwise match paths outside the fixed part and break exclusion.
// `flags: 's'`: picomatch builds `**` from a regex `.`, which would skip file names with a newline.
const MATCH_OPTIONS: picomatchType.PicomatchOptions = {
  dot: true,
  noextglob: true,
  nonegate: true,
  flags: 's',
};
const matchers = new Map<string, (candidate: string) => boolean>();
// Loaded on the first glob match, not at start-up: most CLI calls never match a glob, and loading
// picomatch is a tenth of the CLI's cold start.
let picomatch: typeof picomatchType | undefined;

function matcher(glob: string): (candidate: string) => boolean {
  let match = matchers.get(glob);
  if (match === undefined) {
    picomatch ??= createRequire(import.meta.url)('picomatch') as typeof picomatchType;
    // What picomatch's own matcher answers (its text first, then its regex), without the result
    // object it builds for every call: a decision may match thousands of candidates.
    const text = escapeGroups(glob);
    const regex = picomatch.makeRe(text, MATCH_OPTIONS);
    match = (candidate) => candidate !== '' && (candidate === text || regex.test(candidate));
    matchers.set(glob, match);
  }
  return match;
}

/** A glob's fixed part as text, and the matcher of the rest. */
interface Split {
  readonly fixed: string;
  readonly rest: string;
}
const splits = new Map<string, Split>();

function splitOf(glob: PathScope): Split {
  let split = splits.get(glob.pattern);
  if (split === undefined) {
    split = {
      fixed: glob.fixed.join('/'),
      rest: glob.pattern.split('/').slice(glob.fixed.length).join('/'),
    };
    if (splits.size >= 4096) splits.clear();
    splits.set(glob.pattern, split);
  }
  return split;
}

/**
 * Does the glob scope match the plain path `candidate` (both relative to the tree root)? The fixed
 * part is compared literally, segment by segment, and only the rest goes to picomatch: a folder
 * named `(marketing)` or `a+b` is a name, not a pattern, and a candidate outside the fixed part is
 * refused without compiling anything.
 */
export function globMatches(glob: PathScope, candidate: string): boolean {
  const { fixed, rest } = splitOf(glob);
  let restCandidate: string;
  if (glob.fixed.length === 0) restCandidate = candidate;
  else if (!candidate.startsWith(fixed)) return false;
  else if (candidate.length === fixed.length) restCandidate = '';
  else if (candidate.charCodeAt(fixed.length) !== 47 /* / */) return false;
  else restCandidate = candidate.slice(fixed.length + 1);
  if (restCandidate === '') return rest === '**';
  return matcher(rest)(restCandidate);
}

// Parentheses and bars are regex groups to picomatch even with extglobs off; here they are literal.
// `+` too: picomatch reads a `+` after a `+` as a regex quantifier (`c++` matched `c+` and `c+++`
// matched nothing), which neither the glob overlap rule nor the conflict domains follow. In
// agent-lock's dialect a `+` is always itself.
const escapeGroups = (pattern: string) => pattern.replace(/[()|+]/g, '\\$&');

function isPrefix(shorter: readonly string[], longer: readonly string[]): boolean {
  if (shorter.length > longer.length) return false;
  for (let i = 0; i < shorter.length; i++) if (shorter[i] !== longer[i]) return false;
  return true;
}

/**
 * May two scopes both match one path (same tree assumed for path scopes)? Glob against glob is
 * exact: their automata are searched for a common path (glob-overlap.ts), after the cheap test that
 * their fixed parts agree (every path a glob matches starts with its fixed segments).
 */
export function scopesOverlap(a: Scope, b: Scope): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'resource' || b.kind === 'resource') return a.pattern === b.pattern;
  if (a.pattern === b.pattern) return true;
  if (!a.glob && !b.glob) return false;
  if (!a.glob) return globMatches(b, a.pattern);
  if (!b.glob) return globMatches(a, b.pattern);
  return fixedPartsOverlap(a, b) && (sharedSample(a, b) || globsOverlap(a, b).overlap);
}

/**
 * A quick yes before the search: a path built from one glob (each star one letter, each `**`
 * none, the last star stretched to end with the longer of the two literal endings) that both
 * globs match. Exact, since both really match it, and a normalised path is one the search would
 * find too; the search answers everything this does not settle. Most conflicting pairs a decision
 * compares (a glob by file kind under a folder, against one folder's files) are settled here.
 */
function sharedSample(a: PathScope, b: PathScope): boolean {
  const x = sampleOf(a.pattern);
  const y = sampleOf(b.pattern);
  if (x === null || y === null) return false;
  const ending = x.ending.length >= y.ending.length ? x.ending : y.ending;
  return sharedBy(x, ending, a, b) || sharedBy(y, ending, a, b);
}

interface Sample {
  /** The path up to the last star of the last segment (the whole path when it has no star). */
  readonly stem: string;
  /** The literal text after that star (empty when the last segment has none). */
  readonly ending: string;
  readonly starred: boolean;
}

const samples = new Map<string, Sample | null>();
/** Globs of letters, digits, `._-` and stars only: no class, brace, escape or quote to read. */
const PLAIN_GLOB = /^[A-Za-z0-9._\-*/]+$/;

function sampleOf(pattern: string): Sample | null {
  let sample = samples.get(pattern);
  if (sample === undefined) {
    sample = null;
    if (PLAIN_GLOB.test(pattern)) {
      const segments = pattern.split('/').filter((segment) => segment !== '**');
      const last = segments.pop() ?? '';
      const star = last.lastIndexOf('*');
      const head = segments.map((segment) => `${segment.replace(/\*+/g, 'a')}/`).join('');
      sample =
        star === -1
          ? { stem: head + last, ending: '', starred: false }
          : {
              stem: head + last.slice(0, star).replace(/\*+$/, '').replace(/\*+/g, 'a'),
              ending: last.slice(star + 1),
              starred: true,
            };
    }
    if (samples.size >= 4096) samples.clear();
    samples.set(pattern, sample);
  }
  return sample;
}

function sharedBy(sample: Sample, ending: string, a: PathScope, b: PathScope): boolean {
  const path = sample.starred ? `${sample.stem}a${ending}` : sample.stem;
  return isNormalised(path) && globMatches(a, path) && globMatches(b, path);
}

/** An empty, `.` or `..` segment: no path the tree can hold. */
const UNNORMALISED = /(^|\/)\.{0,2}(\/|$)/;
const isNormalised = (path: string) => !UNNORMALISED.test(path);

/** The rule glob against glob followed before exact overlap: one fixed part contains the other. */
function fixedPartsOverlap(a: PathScope, b: PathScope): boolean {
  return isPrefix(a.fixed, b.fixed) || isPrefix(b.fixed, a.fixed);
}

/** Why two scopes do or do not conflict (`alock explain`). */
export type OverlapReason =
  | 'same_resource'
  | 'other_resource'
  | 'resource_and_path'
  | 'same_path'
  | 'other_path'
  | 'glob_matches_path'
  | 'glob_misses_path'
  | 'fixed_parts_disjoint'
  | 'endings_differ'
  | 'common_path'
  | 'no_common_path'
  | 'too_complex';

export interface OverlapExplanation {
  readonly conflict: boolean;
  readonly reason: OverlapReason;
  /** A path both scopes match (a conflict), when one is known. */
  readonly witness: string | null;
  /** False when a glob was compiled conservatively or the search hit its bound: may over-refuse. */
  readonly exact: boolean;
}

/** The same answer as scopesOverlap, with the reason and, for a conflict, a path both match. */
export function explainOverlap(a: Scope, b: Scope): OverlapExplanation {
  const answer = (conflict: boolean, reason: OverlapReason, witness: string | null = null, exact = true) => ({
    conflict,
    reason,
    witness,
    exact,
  });
  if (a.kind === 'resource' || b.kind === 'resource') {
    if (a.kind !== b.kind) return answer(false, 'resource_and_path');
    return a.pattern === b.pattern ? answer(true, 'same_resource') : answer(false, 'other_resource');
  }
  if (!a.glob && !b.glob) {
    return a.pattern === b.pattern ? answer(true, 'same_path', a.pattern) : answer(false, 'other_path');
  }
  if (!a.glob || !b.glob) {
    const [glob, plain] = a.glob ? [a, b] : [b, a];
    return globMatches(glob, plain.pattern)
      ? answer(true, 'glob_matches_path', plain.pattern)
      : answer(false, 'glob_misses_path');
  }
  if (!fixedPartsOverlap(a, b)) return answer(false, 'fixed_parts_disjoint');
  const found = globsOverlap(a, b);
  if (found.endingsDiffer) return answer(false, 'endings_differ');
  // Identical globs conflict whatever the search says (a glob whose text is no normalised path).
  if (a.pattern === b.pattern && !found.overlap) return answer(true, 'same_path');
  if (found.bounded) return answer(true, 'too_complex', null, false);
  // A glob compiled conservatively may yield a path only its superset matches: name none then.
  const witness =
    found.witness !== null && globMatches(a, found.witness) && globMatches(b, found.witness)
      ? found.witness
      : null;
  if (found.overlap) return answer(true, 'common_path', witness, found.exact);
  return answer(false, 'no_common_path', null, found.exact);
}

/** Does `outer` match every path `inner` can match? Conservative: answers false when unsure. */
export function scopeCovers(outer: Scope, inner: Scope): boolean {
  if (outer.pattern === inner.pattern) return outer.kind === inner.kind;
  if (outer.kind === 'resource' || inner.kind === 'resource') return false;
  if (!outer.glob) return false;
  if (!inner.glob) return globMatches(outer, inner.pattern);
  // Only `prefix/**` (or `**`) is known to cover another glob: everything below the prefix.
  const everythingBelow = outer.fixed.length === 0 ? '**' : `${outer.fixed.join('/')}/**`;
  return outer.pattern === everythingBelow && isPrefix(outer.fixed, inner.fixed);
}
