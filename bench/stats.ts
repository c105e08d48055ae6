// Order statistics of the bench's samples.

/** The nearest-rank percentile (NaN for no samples). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}
export const median = (values: readonly number[]): number => percentile(values, 50);
export const round = (value: number, digits = 2): number => Number(value.toFixed(digits));
