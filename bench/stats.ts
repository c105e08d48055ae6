// Order statistics of the bench's samples.

/** The nearest-rank percentile (NaN for no samples). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}
export const median = (values: readonly number[]): number => percentile(values, 50);
/** The middle value, or the mean of the middle two: two rounds give their mean, not the lower. */
export function averagedMedian(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
export const round = (value: number, digits = 2): number => Number(value.toFixed(digits));
