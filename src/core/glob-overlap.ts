import { type CharSet, DOT, has, intersect, ordinaryMember, SLASH } from './char-set.js';
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
  /** Per state: does its ε-closure accept. */
  readonly accepts: boolean[];
  /** Per state: the edges leaving its ε-closure on one character, by that character. */
  readonly literals: Map<number, number[]>[];
  /** The same, as arrays to walk without allocating: the characters, and their targets. */
  readonly units: number[][];
  readonly targets: number[][][];
  /** Per state: the other edges leaving its ε-closure (wildcards, classes). */
  readonly sets: Edge[][];
}

const prepared = new WeakMap<Automaton, Prepared>();

function prepare(a: Automaton): Prepared {
  let p = prepared.get(a);
  if (p === undefined) {
    p = { accepts: [], literals: [], units: [], targets: [], sets: [] };
    for (let s = 0; s < a.edges.length; s++) {
      const reach = closure(a.eps, s);
      p.accepts.push(reach.has(a.accept));
      const literals = new Map<number, number[]>();
      const sets: Edge[] = [];
      for (const r of reach) {
        for (const edge of a.edges[r]!) {
          const unit = loneUnit(edge.set);
          if (unit === undefined) sets.push(edge);
          else if (!literals.get(unit)?.includes(edge.to))
            literals.set(unit, [...(literals.get(unit) ?? []), edge.to]);
        }
      }
      p.literals.push(literals);
      p.units.push([...literals.keys()]);
      p.targets.push([...literals.values()]);
      p.sets.push(sets);
    }
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
    // A run of three stars leaves later dots as any character to picomatch: no ending either.
    const found = /["\\]|\*\*\*/.test(pattern) ? null : /[^*?[\]{}/+]*$/.exec(pattern);
    ending = found?.[0] ?? '';
    if (endings.size >= 4096) endings.clear();
    endings.set(pattern, ending);
  }
  return ending;
}

/**
 * The search's memory, kept between searches (a decision compares one request with every held glob):
 * the queue of product states in the order they were found, each with the queue index it was
 * reached from and the code unit read, and an open-addressing set of the states seen, whose slots
 * count as empty unless stamped with the current search's number.
 */
let queue = new Float64Array(0);
let parents = new Int32Array(0);
let unitsRead = new Uint16Array(0);
let slotKeys = new Float64Array(0);
let slotStamps = new Uint32Array(0);
let stamp = 0;

function reserve(limit: number): void {
  const size = limit + 1;
  if (queue.length < size) {
    queue = new Float64Array(size);
    parents = new Int32Array(size);
    unitsRead = new Uint16Array(size);
  }
  // At most half full, so that a probe ends soon.
  let slots = 1024;
  while (slots < size * 2) slots *= 2;
  if (slotKeys.length < slots) {
    slotKeys = new Float64Array(slots);
    slotStamps = new Uint32Array(slots);
    stamp = 0;
  }
  stamp++;
  if (stamp === 0xffffffff) {
    slotStamps.fill(0);
    stamp = 1;
  }
}

/** Product states are integers below 2^53: their high and low halves, mixed into a slot. */
const slotOf = (key: number, mask: number): number =>
  (Math.imul((key | 0) ^ ((key / 0x100000000) | 0), 0x9e3779b1) >>> 0) & mask;

/** Adds `key` to the seen set; false when it was there already. */
function firstSight(key: number): boolean {
  const mask = slotKeys.length - 1;
  let slot = slotOf(key, mask);
  while (slotStamps[slot] === stamp) {
    if (slotKeys[slot] === key) return false;
    slot = (slot + 1) & mask;
  }
  slotStamps[slot] = stamp;
  slotKeys[slot] = key;
  return true;
}

/** Searches the product of two automata for a normalised path both accept. */
export function automataOverlap(a: Automaton, b: Automaton, limit = OVERLAP_STATE_LIMIT): GlobOverlap {
  const pa = prepare(a);
  const pb = prepare(b);
  const exact = a.exact && b.exact;
  const width = pb.accepts.length * 4;
  // Breadth first, so the witness is a shortest common path. A product state is one number,
  // p * width + q * 4 + n; each remembers the state it was reached from and the code unit read.
  reserve(limit);
  firstSight(SEGMENT_START);
  queue[0] = SEGMENT_START;
  parents[0] = -1;
  let size = 1;
  let head = 0;
  let n = SEGMENT_START;
  /** Records a step to (tp, tq) on `unit`; true when the search must stop at the bound. */
  const visit = (tp: number, tq: number, unit: number): boolean => {
    const m = stepPath(n, unit);
    if (m < 0) return false;
    const next = tp * width + tq * 4 + m;
    // At the bound only a state not seen before stops the search.
    if (size >= limit) return !known(next);
    if (!firstSight(next)) return false;
    queue[size] = next;
    parents[size] = head;
    unitsRead[size] = unit;
    size++;
    return false;
  };
  const bounded = (): GlobOverlap => {
    boundedCount++;
    return { overlap: true, witness: null, bounded: true, exact: false, states: size };
  };
  for (; head < size; head++) {
    const here = queue[head]!;
    const p = Math.floor(here / width);
    const q = Math.floor((here % width) / 4);
    n = here % 4;
    if (n === ORDINARY && pa.accepts[p] && pb.accepts[q]) {
      return { overlap: true, witness: spell(head), bounded: false, exact, states: size };
    }
    // Literal edges meet by a map lookup, not pair by pair: most of a glob is literal text.
    const unitsA = pa.units[p]!;
    const targetsA = pa.targets[p]!;
    const litB = pb.literals[q]!;
    const unitsB = pb.units[q]!;
    const targetsB = pb.targets[q]!;
    const setsB = pb.sets[q]!;
    for (let i = 0; i < unitsA.length; i++) {
      const unit = unitsA[i]!;
      const targets = targetsA[i]!;
      const meet = litB.get(unit);
      if (meet !== undefined)
        for (const tq of meet) for (const tp of targets) if (visit(tp, tq, unit)) return bounded();
      for (const y of setsB) {
        if (has(y.set, unit)) for (const tp of targets) if (visit(tp, y.to, unit)) return bounded();
      }
    }
    for (const x of pa.sets[p]!) {
      for (let i = 0; i < unitsB.length; i++) {
        const unit = unitsB[i]!;
        if (has(x.set, unit)) for (const tq of targetsB[i]!) if (visit(x.to, tq, unit)) return bounded();
      }
      for (const y of setsB) {
        // Only the kind of character matters to the path automaton: a slash, a dot or any other.
        const both = intersect(x.set, y.set);
        if (!both.negated && both.ranges.length === 0) continue;
        if (has(both, SLASH) && visit(x.to, y.to, SLASH)) return bounded();
        if (has(both, DOT) && visit(x.to, y.to, DOT)) return bounded();
        const other = ordinaryMember(both);
        if (other !== undefined && visit(x.to, y.to, other)) return bounded();
      }
    }
  }
  return { overlap: false, witness: null, bounded: false, exact, states: size };
}

/** Is `key` in the seen set? */
function known(key: number): boolean {
  const mask = slotKeys.length - 1;
  let slot = slotOf(key, mask);
  while (slotStamps[slot] === stamp) {
    if (slotKeys[slot] === key) return true;
    slot = (slot + 1) & mask;
  }
  return false;
}

/** The one code unit a set holds, if it holds exactly one. */
function loneUnit(set: CharSet): number | undefined {
  if (set.negated || set.ranges.length !== 1) return undefined;
  const [lo, hi] = set.ranges[0]!;
  return lo === hi ? lo : undefined;
}

/** The code units read on the way to the queue entry `end`. */
function spell(end: number): string {
  const units: number[] = [];
  for (let at = end; parents[at]! !== -1; at = parents[at]!) units.push(unitsRead[at]!);
  return String.fromCharCode(...units.reverse());
}
