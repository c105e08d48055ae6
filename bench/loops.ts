// The loops the library sections share: a timed loop ((b), (d)) and latency with K locks held
// ((c) on the file store, (e) on Redis).
import { performance } from 'node:perf_hooks';
import { type Locks, openLocks } from '../src/index.js';
import type { BenchContext, Block } from './case.js';
import type { RedisServer } from './redis-server.js';
import { percentile, round } from './stats.js';

export const HELD_COUNTS = [10, 100, 1000];
export const HOLDER_AGENTS = 4;

export function expectStatus(outcome: { status: string }, status: string, what: string): void {
  if (outcome.status !== status)
    throw new Error(`${what}: expected ${status}, got ${JSON.stringify(outcome)}`);
}

/** Runs `step` until `maxOps` or `seconds` are up (the clock is read every 32 steps). */
export async function timeLoop(
  step: () => Promise<void>,
  maxOps: number,
  seconds: number,
): Promise<{ ops: number; ms: number }> {
  const deadline = performance.now() + seconds * 1000;
  const start = performance.now();
  let ops = 0;
  while (ops < maxOps && (ops % 32 !== 0 || performance.now() < deadline)) {
    await step();
    ops += 1;
  }
  return { ops, ms: performance.now() - start };
}

export interface LatencyRow {
  held: number;
  listed: number;
  iterations: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

export interface LatencySeries {
  rows: LatencyRow[];
  ratio100to10: number;
  ratio1000to10: number;
  target: string;
  pass: boolean;
}

type Open = (agentId: string) => Promise<Locks>;

/**
 * acquire+release of work/target.txt while K path scopes are held by other agents; `open(agentId)`
 * opens a handle on the store under test (a fresh one per K).
 */
async function latencyWithHeld(ctx: BenchContext, k: number, open: Open): Promise<LatencyRow> {
  const holders: Locks[] = [];
  let locks: Locks | null = null;
  try {
    for (let i = 0; i < HOLDER_AGENTS; i++) holders.push(await open(`holder-${i}`));
    for (let i = 0; i < k; i++) {
      expectStatus(
        await holders[i % HOLDER_AGENTS]!.acquire(`held/file${i}.txt`),
        'acquired',
        `pre-acquire ${i}`,
      );
    }
    const mine = await open('bench');
    locks = mine;
    const step = async () => {
      const start = performance.now();
      expectStatus(await mine.acquire('work/target.txt'), 'acquired', 'acquire work/target.txt');
      expectStatus(await mine.release('work/target.txt'), 'released', 'release work/target.txt');
      return performance.now() - start;
    };
    for (let i = 0; i < ctx.settings.latWarmup; i++) await step();
    const samples: number[] = [];
    for (let i = 0; i < ctx.settings.latIters; i++) samples.push(await step());
    const held = (await mine.list()).locks.length;
    return {
      held: k,
      listed: held,
      iterations: samples.length,
      p50Ms: round(percentile(samples, 50), 3),
      p99Ms: round(percentile(samples, 99), 3),
      meanMs: round(samples.reduce((a, b) => a + b, 0) / samples.length, 3),
    };
  } finally {
    await locks?.close();
    for (const h of holders) await h.close();
  }
}

/** latencyWithHeld for every K, and the ratios against the target. `openFor(k)` gives its `open`. */
export async function latencySeries(
  ctx: BenchContext,
  openFor: (k: number) => Open,
  maxRatio: number,
): Promise<LatencySeries> {
  const rows: LatencyRow[] = [];
  for (const k of HELD_COUNTS) rows.push(await latencyWithHeld(ctx, k, openFor(k)));
  const at = (k: number) => rows.find((r) => r.held === k)!;
  const ratio1000 = round(at(1000).p50Ms / at(10).p50Ms);
  const ratio100 = round(at(100).p50Ms / at(10).p50Ms);
  return {
    rows,
    ratio100to10: ratio100,
    ratio1000to10: ratio1000,
    target: `p50(1000)/p50(10) <= ${maxRatio}x`,
    pass: ratio1000 <= maxRatio,
  };
}

/** The table (c) and (e) print. */
export function latencyTable(title: string, series: LatencySeries, maxRatio: number): Block {
  return {
    kind: 'table',
    title,
    header: ['locks held', 'iterations', 'p50 ms', 'p99 ms', 'mean ms'],
    rows: series.rows.map((r) => [
      r.held,
      r.iterations,
      r.p50Ms.toFixed(3),
      r.p99Ms.toFixed(3),
      r.meanMs.toFixed(3),
    ]),
    verdicts: [
      { label: 'ratio p50 100/10', ratio: series.ratio100to10, target: `<= ${maxRatio}x`, pass: null },
      { label: 'ratio p50 1000/10', ratio: series.ratio1000to10, target: series.target, pass: series.pass },
    ],
  };
}

/** agent-lock on the bench's redis-server, under a prefix of its own (one per store). */
export function openRedisLocks(
  ctx: BenchContext,
  server: RedisServer,
  name: string,
  agentId: string,
  store: { tree: string; store: string },
): Promise<Locks> {
  return openLocks({
    backend: 'redis',
    redisUrl: server.url,
    dir: store.tree,
    storeDir: store.store,
    identity: { agentId },
    env: ctx.cleanEnv({ AGENT_LOCK_REDIS_PREFIX: `${ctx.benchPrefix}-${name}` }),
  });
}
