/** Sets of UTF-16 code units, the labels of glob-overlap.ts's automata. */

/** A set of UTF-16 code units: the listed ranges, or (negated) everything but them. */
export interface CharSet {
  readonly negated: boolean;
  /** Sorted, disjoint, inclusive. */
  readonly ranges: readonly (readonly [number, number])[];
}

export const SLASH = 47;
export const DOT = 46;
export const ANY: CharSet = { negated: true, ranges: [] };
export const NOT_SLASH: CharSet = { negated: true, ranges: [[SLASH, SLASH]] };
export const single = (unit: number): CharSet => ({ negated: false, ranges: [[unit, unit]] });

export function normalise(negated: boolean, ranges: [number, number][]): CharSet {
  const sorted = [...ranges].sort((x, y) => x[0] - y[0]);
  const merged: [number, number][] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && range[0] <= last[1] + 1) last[1] = Math.max(last[1], range[1]);
    else merged.push([range[0], range[1]]);
  }
  return { negated, ranges: merged };
}

export function intersect(x: CharSet, y: CharSet): CharSet {
  // The common meetings (a wildcard with anything, a set with itself) allocate nothing.
  if (x === y || (y.negated && y.ranges.length === 0)) return x;
  if (x.negated && x.ranges.length === 0) return y;
  if (x.negated && y.negated && sameRanges(x, y)) return x;
  if (x.negated && y.negated) return normalise(true, [...x.ranges, ...y.ranges] as [number, number][]);
  if (x.negated) return intersect(y, x);
  const out: [number, number][] = [];
  for (const [lo, hi] of x.ranges) {
    if (!y.negated) {
      for (const [a, z] of y.ranges)
        if (Math.max(lo, a) <= Math.min(hi, z)) out.push([Math.max(lo, a), Math.min(hi, z)]);
      continue;
    }
    // x's range less y's excluded ranges.
    let from = lo;
    for (const [a, z] of y.ranges) {
      if (z < from || a > hi) continue;
      if (a > from) out.push([from, a - 1]);
      from = Math.max(from, z + 1);
    }
    if (from <= hi) out.push([from, hi]);
  }
  return { negated: false, ranges: out };
}

export function has(set: CharSet, unit: number): boolean {
  let inside = false;
  for (const range of set.ranges) {
    if (range[0] <= unit && unit <= range[1]) {
      inside = true;
      break;
    }
  }
  return set.negated ? !inside : inside;
}

// Witness characters people read easily come first.
const PREFERRED = 'abcdefghijklmnopqrstuvwxyz0123456789_-ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A member of `set` other than `/` and `.`, if any. */
export function ordinaryMember(set: CharSet): number | undefined {
  if (!set.negated) {
    // A listed set (a literal, a class): its first member is as readable as any, and found at once.
    for (const [lo, hi] of set.ranges) {
      for (let unit = lo; unit <= hi; unit++) if (unit !== SLASH && unit !== DOT) return unit;
    }
    return undefined;
  }
  for (let k = 0; k < PREFERRED.length; k++) {
    if (has(set, PREFERRED.charCodeAt(k))) return PREFERRED.charCodeAt(k);
  }
  for (let unit = 0x20; unit <= 0xffff; unit++)
    if (unit !== SLASH && unit !== DOT && has(set, unit)) return unit;
  return undefined;
}

function sameRanges(x: CharSet, y: CharSet): boolean {
  if (x.ranges.length !== y.ranges.length) return false;
  for (let i = 0; i < x.ranges.length; i++) {
    if (x.ranges[i]![0] !== y.ranges[i]![0] || x.ranges[i]![1] !== y.ranges[i]![1]) return false;
  }
  return true;
}
