import { ANY, type CharSet, NOT_SLASH, normalise, SLASH, single } from './char-set.js';

/**
 * Globs compiled to automata over the UTF-16 code units of a path (as picomatch's regexes read
 * them), in picomatch's dialect with the options agent-lock matches with (scope.ts): dot files
 * included, extglobs and negation off, braces and classes on; `**` as a whole segment spans
 * separators, `*` and `?` do not. A few constructs are compiled to a superset of what picomatch
 * matches (escapes, quotes, brace ranges, POSIX classes, `**` inside braces): such an automaton is
 * marked inexact, so that a comparison may over-refuse but never under-refuse.
 */

export interface Edge {
  readonly set: CharSet;
  readonly to: number;
}

/** An automaton with ε-moves: state 0 starts, `accept` accepts. */
export interface Automaton {
  readonly edges: readonly (readonly Edge[])[];
  readonly eps: readonly (readonly number[])[];
  readonly accept: number;
  /** False when part of the glob was compiled to a superset of what picomatch matches. */
  readonly exact: boolean;
}

class Approximate extends Error {}

const automata = new Map<string, Automaton>();
const CACHE_LIMIT = 4096;

/**
 * The automaton of a stored glob pattern: its fixed segments literally, then the rest as picomatch
 * reads it, plus the rest's own text (picomatch matches a path equal to the glob before its regex).
 */
export function globAutomaton(pattern: string, fixed: readonly string[]): Automaton {
  let automaton = automata.get(pattern);
  if (automaton === undefined) {
    automaton = compile(fixed, pattern.split('/').slice(fixed.length).join('/'));
    // A bounded cache: decisions compare the same held patterns again and again.
    if (automata.size >= CACHE_LIMIT) automata.clear();
    automata.set(pattern, automaton);
  }
  return automaton;
}

class Builder {
  readonly edges: Edge[][] = [];
  readonly eps: number[][] = [];
  exact = true;
  state(): number {
    this.edges.push([]);
    this.eps.push([]);
    return this.edges.length - 1;
  }
  edge(from: number, set: CharSet, to: number): void {
    this.edges[from]!.push({ set, to });
  }
  epsilon(from: number, to: number): void {
    this.eps[from]!.push(to);
  }
  /** Appends the code units of `text` after `from`; returns the state after the last one. */
  literal(from: number, text: string): number {
    let at = from;
    for (let i = 0; i < text.length; i++) {
      const next = this.state();
      this.edge(at, single(text.charCodeAt(i)), next);
      at = next;
    }
    return at;
  }
  /** `set` repeated zero or more times after `from`. */
  loop(from: number, set: CharSet): number {
    const at = this.state();
    this.epsilon(from, at);
    this.edge(at, set, at);
    return at;
  }
}

function compile(fixed: readonly string[], rest: string): Automaton {
  const b = new Builder();
  const start = b.state();
  const accept = b.state();
  let at = fixed.length === 0 ? start : b.literal(start, `${fixed.join('/')}/`);
  // globMatches answers the fixed folder itself only for a rest of exactly `**` (`src/**` holds `src`).
  if (rest === '**' && fixed.length > 0) b.epsilon(b.literal(start, fixed.join('/')), accept);
  // picomatch compares the candidate with the glob's text first; the glob it gets has `()|+` escaped.
  b.epsilon(b.literal(at, rest.replace(/[()|+]/g, '\\$&')), accept);
  // picomatch's fast path reads a rest of `**` then word endings (`**.ts`, `**.d.ts`) as any text,
  // slashes included, then those endings: `**.ts` matches `a/b.ts`.
  const fast = /^\*\*((?:\.\w+)+)$/.exec(rest);
  if (fast !== null) {
    b.epsilon(b.literal(b.loop(at, ANY), fast[1]!), accept);
    return { edges: b.edges, eps: b.eps, accept, exact: b.exact };
  }
  try {
    const parser = new RestParser(rest, b);
    at = parser.sequence(at, 0, rest.length);
    b.epsilon(at, accept);
  } catch (error) {
    if (error instanceof InvalidRegex) {
      // picomatch matches nothing but the glob's own text when its regex would not compile.
    } else if (error instanceof Approximate) {
      // Anything below the fixed part: every path picomatch could match, and more.
      b.exact = false;
      const base = fixed.length === 0 ? start : b.literal(start, `${fixed.join('/')}/`);
      const first = b.state();
      b.edge(base, ANY, first);
      b.epsilon(b.loop(first, ANY), accept);
    } else {
      throw error;
    }
  }
  return { edges: b.edges, eps: b.eps, accept, exact: b.exact };
}

/** picomatch answers a glob whose regex does not compile (a reversed range) with "no match". */
class InvalidRegex extends Error {}

interface Brace {
  readonly open: number;
  readonly close: number;
  /** Positions of the top-level commas; none means `{` and `}` are literal characters. */
  readonly commas: number[];
}

const GLOBSTAR_SEGMENT = (t: string, at: number) =>
  t.startsWith('**', at) && (at + 2 === t.length || t[at + 2] === '/');

/**
 * Reads the part of a glob after its fixed segments the way picomatch's parser does, and builds
 * its automaton. Positions index the rest string; `sequence(from, lo, hi)` compiles `rest[lo, hi)`.
 */
class RestParser {
  private readonly braces = new Map<number, Brace>();
  private readonly classes = new Map<number, number>();
  /** Brace nesting (comma or not) at each position: picomatch reads `.` and `**` differently inside. */
  private readonly depth: number[] = [];

  constructor(
    private readonly text: string,
    private readonly b: Builder,
  ) {
    if (/["\\]/.test(text)) throw new Approximate('escapes and quotes');
    // A run of three stars makes picomatch rebuild its regex from raw tokens, leaving a later `.`
    // unescaped (any character, a slash too): `x/***.d.ts` matches `x/y.d/ts`. New scopes with such a
    // run are refused (scope.ts); one already stored is compiled as a superset.
    if (text.includes('***')) throw new Approximate('three stars');
    this.scan();
  }

  /** Finds classes and braces as picomatch pairs them (a class hides braces inside it). */
  private scan(): void {
    const stack: { open: number; commas: number[]; dots: boolean }[] = [];
    const t = this.text;
    for (let i = 0; i < t.length; i++) {
      this.depth[i] = stack.length;
      const c = t[i];
      if (c === '[' && t.indexOf(']', i + 1) !== -1) {
        const close = this.classEnd(i);
        this.classes.set(i, close);
        for (let k = i; k <= close; k++) this.depth[k] = stack.length;
        i = close;
      } else if (c === '{') {
        stack.push({ open: i, commas: [], dots: false });
      } else if (c === ',' && stack.length > 0) {
        stack[stack.length - 1]!.commas.push(i);
      } else if (c === '.' && t[i + 1] === '.' && stack.length > 0) {
        stack[stack.length - 1]!.dots = true;
      } else if (c === '}' && stack.length > 0) {
        const brace = stack.pop()!;
        if (brace.dots) throw new Approximate('brace range');
        // A brace without a comma is literal text, and picomatch rebuilds its regex from the raw
        // text of tokens it had emptied: a `**` inside then yields an extra slash (`{a/**/b}` matches
        // `{a//b}`, not `{a/b}`) or a regex that does not compile. Compiled as a superset.
        if (brace.commas.length === 0 && t.slice(brace.open, i).includes('**')) {
          throw new Approximate('globstar in literal braces');
        }
        this.braces.set(brace.open, { open: brace.open, close: i, commas: brace.commas });
      }
    }
    // An unclosed brace makes picomatch's regex match nothing (`$^`): only the glob's own text.
    if (stack.length > 0) throw new InvalidRegex('unclosed brace');
  }

  /** The `]` closing the class opened at `open`; a `]` first in the class is a member. */
  private classEnd(open: number): number {
    const t = this.text;
    let i = open + 1;
    if (t[i] === '^') i++;
    if (t[i] === ']') i++;
    const close = t.indexOf(']', i);
    if (close === -1) throw new Approximate('unclosed class');
    if (t.slice(open + 1, close).includes('[:')) throw new Approximate('POSIX class');
    return close;
  }

  /** Compiles `text[lo, hi)` after state `from`; returns the state where it ends. */
  sequence(from: number, lo: number, hi: number): number {
    const t = this.text;
    const b = this.b;
    let at = from;
    let i = lo;
    if (lo === 0 && GLOBSTAR_SEGMENT(t, 0)) {
      const end = this.skipGlobstars(2);
      if (end === t.length) return b.loop(at, ANY); // `**` alone: anything
      // `**/rest`: the rest at the top, or below any folders (picomatch's `(?:^|\/|G\/)`).
      const out = b.state();
      b.epsilon(at, out);
      b.edge(b.loop(at, ANY), single(SLASH), out);
      at = out;
      i = end + 1;
    }
    while (i < hi) {
      const c = t[i]!;
      if (c === '/' && this.depth[i] === 0 && i > 0 && GLOBSTAR_SEGMENT(t, i + 1)) {
        return this.globstarAfter(at, i, hi);
      }
      // Inside braces picomatch reads `/**/` as `(?:\/G\/|\/|$)`: the slashes around the globstar
      // may both vanish (`{a/**/b,c}` matches `a/b`). Compiled as any text, a superset.
      if (c === '/' && this.depth[i]! > 0 && t.startsWith('**/', i + 1)) {
        b.exact = false;
        at = b.loop(at, ANY);
        i += 4;
        continue;
      }
      const brace = c === '{' ? this.braces.get(i) : undefined;
      if (brace !== undefined && brace.commas.length > 0) {
        if (t[brace.close + 1] === '+') throw new Approximate('+ after a brace');
        const end = b.state();
        const bounds = [brace.open, ...brace.commas, brace.close];
        for (let k = 0; k + 1 < bounds.length; k++) {
          b.epsilon(this.sequence(at, bounds[k]! + 1, bounds[k + 1]!), end);
        }
        at = end;
        i = brace.close + 1;
        continue;
      }
      // picomatch leaves a `+` after a bracket or a brace as a regex quantifier.
      if ((c === '{' || c === '}' || c === '[') && t[i + 1] === '+') throw new Approximate('+ quantifier');
      const close = c === '[' ? this.classes.get(i) : undefined;
      if (close !== undefined) {
        if (t[close + 1] === '+') throw new Approximate('+ quantifier');
        at = this.characterClass(at, t.slice(i + 1, close));
        i = close + 1;
        continue;
      }
      if (c === '*') {
        let run = 1;
        while (t[i + run] === '*') run++;
        at = this.stars(at, i, run);
        i += run;
        continue;
      }
      if (c === '?') {
        const next = b.state();
        b.edge(at, NOT_SLASH, next);
        at = next;
        i++;
        continue;
      }
      // Inside braces picomatch makes `.*` refuse an empty or dot-only rest (a lookahead): ignored.
      if (c === '.' && t[i + 1] === '*' && this.depth[i]! > 0) b.exact = false;
      at = b.literal(at, c);
      i++;
    }
    return at;
  }

  /** Past a globstar ending at `end`, and past every `/**` segment after it (they add nothing). */
  private skipGlobstars(end: number): number {
    let at = end;
    while (this.text[at] === '/' && GLOBSTAR_SEGMENT(this.text, at + 1)) at += 3;
    return at;
  }

  /** `x/**` or `x/**\/rest` at the top level, with the slash at `slash`; compiles to `hi`. */
  private globstarAfter(from: number, slash: number, hi: number): number {
    const t = this.text;
    const b = this.b;
    const end = this.skipGlobstars(slash);
    const below = b.state();
    b.edge(from, single(SLASH), below);
    const any = b.loop(below, ANY);
    if (end === t.length) {
      // `x/**` also matches `x` itself, unless x ends in a star (picomatch: `*/**` needs a folder).
      const out = b.state();
      b.epsilon(any, out);
      if (t[slash - 1] !== '*') b.epsilon(from, out);
      return out;
    }
    // `x/**/rest`: `x/rest`, `x/…/rest`, or (picomatch's `|$`) `x` alone when rest can be empty.
    const out = b.state();
    b.edge(any, single(SLASH), out);
    b.edge(from, single(SLASH), out);
    const last = this.sequence(out, end + 1, hi);
    // A lone star first in the rest requires some character to follow (picomatch's `(?=.)`).
    const oneChar = t[end + 1] === '*' && t[end + 2] !== '*';
    if (oneChar || !closure(b.eps, out).has(last)) return last;
    // A fresh end state: an ε-move into `last` itself would also enter any loop on it.
    const fin = b.state();
    b.epsilon(last, fin);
    b.epsilon(from, fin);
    return fin;
  }

  private stars(from: number, i: number, run: number): number {
    const t = this.text;
    // picomatch's fast path for exactly `*.*` and `**/*.*` wants a character after the dot.
    if (run === 1 && i === t.length - 1 && /^(\*\*\/)?\*\.\*$/.test(t)) {
      const first = this.b.state();
      this.b.edge(from, NOT_SLASH, first);
      return this.b.loop(first, NOT_SLASH);
    }
    const before = t[i - 1] ?? '';
    const after = t[i + run] ?? '';
    // `**` next to a brace or a comma (or a whole segment inside braces) stays a globstar to
    // picomatch, spanning folders: compiled as any text at all, a superset.
    if (run === 2 && /^[{},/]?$/.test(before) && /^[{},/]?$/.test(after)) {
      this.b.exact = false;
      return this.b.loop(from, ANY);
    }
    return this.b.loop(from, NOT_SLASH);
  }

  private characterClass(from: number, content: string): number {
    const b = this.b;
    let body = content;
    const negated = body.startsWith('^');
    if (negated) body = body.slice(1);
    const ranges: [number, number][] = [];
    for (let k = 0; k < body.length; k++) {
      const lo = body.charCodeAt(k);
      if (body[k + 1] === '-' && k + 2 < body.length) {
        const hi = body.charCodeAt(k + 2);
        if (hi < lo) throw new InvalidRegex('reversed range');
        ranges.push([lo, hi]);
        k += 2;
      } else {
        ranges.push([lo, lo]);
      }
    }
    // A negated class never matches a slash (picomatch adds it); a positive one may list it.
    if (negated) ranges.push([SLASH, SLASH]);
    const next = b.state();
    b.edge(from, normalise(negated, ranges), next);
    // picomatch also matches a class with no regex characters as its own text: `[ab]` matches `[ab]`.
    if (!/[-*+?.^${}()|[\]]/.test(content)) b.epsilon(b.literal(from, `[${content}]`), next);
    return next;
  }
}

export function closure(eps: readonly (readonly number[])[], from: number): Set<number> {
  const seen = new Set([from]);
  const todo = [from];
  while (todo.length > 0) {
    for (const next of eps[todo.pop()!]!) {
      if (!seen.has(next)) {
        seen.add(next);
        todo.push(next);
      }
    }
  }
  return seen;
}
