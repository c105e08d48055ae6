import { DOT, has, intersect, ordinaryMember, SLASH } from './char-set.js';
import { type Automaton, closure, type Edge, globAutomaton } from './glob-automaton.js';

/**
 * Exact glob-versus-glob overlap: may some path match both globs? The product of their automata
 * (glob-automaton.ts), together with a small automaton that accepts only normalised paths, is
 * searched breadth first for an accepting state. The first one found spells a witness: a shortest
 * path that matches both. Pure and bounded: past `limit` product states the answer is "overlap"
 * (the safe side), and counted.
 */

export interface GlobOverlap {
  readonly overlap: boolean;
  /** A path matching both globs, when they overlap and the search finished. */
  readonly witness: string | null;
  /** True when the search gave up at the bound and answered "overlap" to stay safe. */
  readonly bounded: boolean;
  /** False when a glob holds a construct compiled conservatively (the answer may over-refuse). */
  readonly exact: boolean;
  /** Product states visited. */
  readonly states: number;
  /** True when the globs were told apart by their literal endings, without a search. */
  readonly endingsDiffer?: boolean;
}

export const OVERLAP_STATE_LIMIT = 10_000;

/** Raised while compiling a construct this compiler only over-approximates. */
let boundedCount = 0;
/** How many comparisons gave up at the bound since the process started (reported by `explain`). */
export function boundedOverlaps(): number {
  return boundedCount;
}

// ---- The product search ----

// A path is normalised: no empty segment, no `.` or `..` segment, no leading or trailing slash.
// States: 0 at a segment's start, 1 after `.`, 2 after `..`, 3 inside an ordinary segment.
const SEGMENT_START = 0;
const ORDINARY = 3;
function stepPath(state: number, unit: number): number {
  if (unit === SLASH) return state === ORDINARY ? SEGMENT_START : -1;
  if (unit === DOT) return state < 2 ? state + 1 : ORDINARY;
  return ORDINARY;
}

interface Prepared {
  /** Per state: does its ε-closure accept, and the edges leaving its closure. */
  readonly accepts: boolean[];
  readonly moves: Edge[][];
}

const prepared = new WeakMap<Automaton, Prepared>();

function prepare(a: Automaton): Prepared {
  let p = prepared.get(a);
  if (p === undefined) {
    const accepts: boolean[] = [];
    const moves: Edge[][] = [];
    for (let s = 0; s < a.edges.length; s++) {
      const reach = closure(a.eps, s);
      accepts.push(reach.has(a.accept));
      moves.push([...reach].flatMap((r) => a.edges[r]!));
    }
    p = { accepts, moves };
    prepared.set(a, p);
  }
  return p;
}

/** May some path match both globs (their fixed parts already agree)? */
export function globsOverlap(
  a: { readonly pattern: string; readonly fixed: readonly string[] },
  b: { readonly pattern: string; readonly fixed: readonly string[] },
  limit = OVERLAP_STATE_LIMIT,
): GlobOverlap {
  if (!endingsAgree(a.pattern, b.pattern)) {
    return { overlap: false, witness: null, bounded: false, exact: true, states: 0, endingsDiffer: true };
  }
  return automataOverlap(globAutomaton(a.pattern, a.fixed), globAutomaton(b.pattern, b.fixed), limit);
}

/**
 * Every path a glob matches ends with the literal text after its last wildcard, within the last
 * segment (`.test.ts` for a glob ending in `*.test.ts`): two globs whose endings differ (neither ends
 * the other) share no path, and most globs agents take by file kind are told apart here at once.
 */
function endingsAgree(a: string, b: string): boolean {
  const x = literalEnding(a);
  const y = literalEnding(b);
  return x.endsWith(y) || y.endsWith(x);
}

const endings = new Map<string, string>();
function literalEnding(pattern: string): string {
  let ending = endings.get(pattern);
  if (ending === undefined) {
    // Escapes and quotes change what is literal: no ending is claimed for such a glob. A `+` may be
    // a regex quantifier to picomatch after a class or a brace, so the ending stops there too.
    const found = /["\\]/.test(pattern) ? null : /[^*?[\]{}/+]*$/.exec(pattern);
    ending = found?.[0] ?? '';
    if (endings.size >= 4096) endings.clear();
    endings.set(pattern, ending);
  }
  return ending;
}

/** Searches the product of two automata for a normalised path both accept. */
export function automataOverlap(a: Automaton, b: Automaton, limit = OVERLAP_STATE_LIMIT): GlobOverlap {
  const pa = prepare(a);
  const pb = prepare(b);
  const exact = a.exact && b.exact;
  const width = pb.accepts.length * 4;
  const key = (p: number, q: number, n: number) => p * width + q * 4 + n;
  // Breadth first, so the witness is a shortest common path; each state records how it was reached.
  const parent = new Map<number, { from: number; unit: number }>();
  const queue: [number, number, number][] = [[0, 0, SEGMENT_START]];
  parent.set(key(0, 0, SEGMENT_START), { from: -1, unit: -1 });
  for (let head = 0; head < queue.length; head++) {
    const [p, q, n] = queue[head]!;
    const here = key(p, q, n);
    if (n === ORDINARY && pa.accepts[p] && pb.accepts[q]) {
      return { overlap: true, witness: spell(parent, here), bounded: false, exact, states: parent.size };
    }
    for (const x of pa.moves[p]!) {
      for (const y of pb.moves[q]!) {
        const both = intersect(x.set, y.set);
        if (!both.negated && both.ranges.length === 0) continue;
        const ordinary = ordinaryMember(both);
        for (const unit of [SLASH, DOT, ordinary]) {
          if (unit === undefined || (unit !== ordinary && !has(both, unit))) continue;
          const m = stepPath(n, unit);
          if (m < 0) continue;
          const next = key(x.to, y.to, m);
          if (parent.has(next)) continue;
          if (parent.size >= limit) {
            boundedCount++;
            return { overlap: true, witness: null, bounded: true, exact: false, states: parent.size };
          }
          parent.set(next, { from: here, unit });
          queue.push([x.to, y.to, m]);
        }
      }
    }
  }
  return { overlap: false, witness: null, bounded: false, exact, states: parent.size };
}

function spell(parent: Map<number, { from: number; unit: number }>, end: number): string {
  const units: number[] = [];
  for (let at = end; ; ) {
    const step = parent.get(at)!;
    if (step.from === -1) break;
    units.push(step.unit);
    at = step.from;
  }
  return String.fromCharCode(...units.reverse());
}
