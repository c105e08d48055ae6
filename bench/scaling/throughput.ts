// Section (k), part 1: N = 1, 2, 4, 8 workers, each looping acquire+release of a lock no other
// worker wants, on each contender. Aggregate ops/s is the median of the rounds' sums of each
// worker's rate; p99 is of one acquire+release (all pairs of all rounds). In the same points, for
// information: the workers' CPU per pair (process.cpuUsage() over each worker's window, summed over
// workers and rounds, / the pairs) and, on Redis, the server's (INFO cpu used_cpu_sys +
// used_cpu_user read just before 'go' and once the results are in, / the pairs). Beside the libraries, the
// contract bound (bench/scaling/contract.ts) on a key of each worker's own: the floor any lock with
// agent-lock's contract has at that N, so each N shows how far it is from redis-semaphore and from
// agent-lock.
import { Redis } from 'ioredis';
import { openLocks } from '../../src/index.js';
import type { Verdict } from '../case.js';
import { atLeast, info } from '../case.js';
import type { Settings } from '../settings.js';
import { TARGETS } from '../settings.js';
import { averagedMedian, percentile, round } from '../stats.js';
import type { Pool } from './pool.js';
import { type AgentLockRecord, agentLockRecord } from './contract.js';
import { type ContenderKey, workerAgentId, workerResource } from './protocol.js';

export const WORKER_COUNTS = [1, 2, 4, 8];

export interface Contender {
  key: ContenderKey;
  name: string;
  redis: boolean;
}

export const CONTENDERS: readonly Contender[] = [
  { key: 'redisResource', name: 'agent-lock Redis, own @resource', redis: true },
  { key: 'fileResource', name: 'agent-lock file store, own @resource', redis: false },
  { key: 'semaphore', name: 'redis-semaphore Mutex, own key', redis: true },
  {
    key: 'contract',
    name: 'contract bound (record + fence EVALSHA, CAD EVALSHA), own key',
    redis: true,
  },
  { key: 'redisPath', name: 'agent-lock Redis, own file path', redis: true },
  { key: 'filePath', name: 'agent-lock file store, own file path', redis: false },
];

export interface ThroughputRow {
  key: ContenderKey;
  name: string;
  workers: number;
  ops: number;
  opsPerSec: number;
  minOpsPerSec: number;
  maxOpsPerSec: number;
  p50Ms: number | null;
  p99Ms: number | null;
  /** The workers' CPU time (user + system) per acquire+release, µs; null with no pairs. */
  clientCpuUsPerPair: number | null;
  /** The Redis server's CPU time (user + system, not its children's) per pair, µs; null off Redis. */
  redisCpuUsPerPair: number | null;
}

/**
 * The size of the contract bound's record in the workers: agent-lock's record for a worker's own
 * @resource (worker 0's agent id and scope, every worker's are as long), taken on a Redis store of
 * its own under `prefix` and found as one-client.ts finds its own. Run before the workers start.
 */
export async function workersRecord(
  redisUrl: string,
  where: { tree: string; store: string },
  prefix: string,
  env: NodeJS.ProcessEnv,
  leaseMs: number,
): Promise<AgentLockRecord> {
  const locks = await openLocks({
    backend: 'redis',
    redisUrl,
    dir: where.tree,
    storeDir: where.store,
    identity: { agentId: workerAgentId(0) },
    env: { ...env, AGENT_LOCK_REDIS_PREFIX: prefix },
  });
  const inspector = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await inspector.connect();
    return await agentLockRecord(locks, inspector, prefix, workerResource(0), leaseMs / 1000);
  } finally {
    await locks.close();
    inspector.disconnect();
  }
}

/** The server's own CPU time so far, µs: INFO cpu used_cpu_sys + used_cpu_user (not _children). */
async function serverCpuUs(client: Redis): Promise<number> {
  const cpu = String(await client.info('cpu'));
  const seconds = (field: string) => {
    const m = cpu.match(new RegExp(`^${field}:([0-9.]+)`, 'm'));
    if (!m) throw new Error(`INFO cpu has no ${field}`);
    return Number(m[1]);
  };
  return (seconds('used_cpu_sys') + seconds('used_cpu_user')) * 1e6;
}

/**
 * One point: N workers warm up, then all loop for the point's seconds at once. With `redis`, the
 * server's CPU time over the window (from just before 'go' to the last result).
 */
async function runPoint(
  pool: Pool,
  contender: ContenderKey,
  n: number,
  settings: Settings,
  redis: Redis | null,
) {
  const some = pool.workers.slice(0, n);
  await pool.request(some, { type: 'warm', contender, ms: settings.scalingWarmupMs }, 'warm');
  const serverBefore = redis === null ? null : await serverCpuUs(redis);
  const results = await pool.request(some, { type: 'go', seconds: settings.scalingPointSeconds }, 'result');
  const serverAfter = redis === null ? null : await serverCpuUs(redis);
  return {
    rate: results.reduce((sum, r) => sum + (r.ops / r.ms) * 1000, 0),
    ops: results.reduce((sum, r) => sum + r.ops, 0),
    samples: results.flatMap((r) => r.samples),
    cpuUs: results.reduce((sum, r) => sum + r.cpuUs, 0),
    serverCpuUs: serverBefore === null || serverAfter === null ? null : serverAfter - serverBefore,
  };
}

const roundOrNull = (value: number, digits: number) => (Number.isFinite(value) ? round(value, digits) : null);

interface Point {
  rates: number[];
  ops: number;
  samples: number[];
  cpuUs: number;
  serverCpuUs: number;
}

/**
 * Rounds run every (N, contender) point, the contenders in a different order each time, so that
 * machine noise falls on all of them. The workers stay up for the whole section (each warms up
 * before every point), so the figures hold no process start-up. `redisUrl` (null: no Redis
 * contenders) is the server whose CPU time the Redis points read, on a client of their own.
 */
export async function throughput(
  pool: Pool,
  contenders: readonly Contender[],
  settings: Settings,
  redisUrl: string | null,
): Promise<ThroughputRow[]> {
  const points = new Map<string, Point>();
  for (const c of contenders)
    for (const n of WORKER_COUNTS)
      points.set(`${c.key}/${n}`, { rates: [], ops: 0, samples: [], cpuUs: 0, serverCpuUs: 0 });
  const redis =
    redisUrl === null ? null : new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis?.connect();
    for (let r = 0; r < settings.scalingRounds; r++) {
      for (const [ni, n] of WORKER_COUNTS.entries()) {
        for (let j = 0; j < contenders.length; j++) {
          const c = contenders[(r + ni + j) % contenders.length]!;
          const got = await runPoint(pool, c.key, n, settings, c.redis ? redis : null);
          const point = points.get(`${c.key}/${n}`)!;
          point.rates.push(got.rate);
          point.ops += got.ops;
          for (const s of got.samples) point.samples.push(s);
          point.cpuUs += got.cpuUs;
          point.serverCpuUs += got.serverCpuUs ?? 0;
        }
      }
    }
  } finally {
    redis?.disconnect();
  }
  const perPair = (us: number, pairs: number) => (pairs === 0 ? null : round(us / pairs, 1));
  const rows: ThroughputRow[] = [];
  for (const c of contenders) {
    for (const n of WORKER_COUNTS) {
      const point = points.get(`${c.key}/${n}`)!;
      rows.push({
        key: c.key,
        name: c.name,
        workers: n,
        ops: point.ops,
        opsPerSec: Math.round(averagedMedian(point.rates)),
        minOpsPerSec: Math.round(Math.min(...point.rates)),
        maxOpsPerSec: Math.round(Math.max(...point.rates)),
        p50Ms: roundOrNull(percentile(point.samples, 50), 3),
        p99Ms: roundOrNull(percentile(point.samples, 99), 3),
        clientCpuUsPerPair: perPair(point.cpuUs, point.ops),
        redisCpuUsPerPair: c.redis && redis !== null ? perPair(point.serverCpuUs, point.ops) : null,
      });
    }
  }
  return rows;
}

/** The Redis verdicts are not measured (null) when `redis` is false. */
export function throughputVerdicts(rows: readonly ThroughputRow[], redis: boolean): Verdict[] {
  const rate = (key: ContenderKey, n: number) =>
    rows.find((r) => r.key === key && r.workers === n)?.opsPerSec ?? null;
  const ratio = (a: number | null, b: number | null) =>
    a === null || b === null || b === 0 ? null : round(a / b);
  const t = TARGETS.scaling;
  const verdicts: Verdict[] = [];
  for (const n of WORKER_COUNTS) {
    verdicts.push(
      atLeast(
        `Redis own @resource / redis-semaphore, N=${n}`,
        redis ? ratio(rate('redisResource', n), rate('semaphore', n)) : null,
        t.redisVsSemaphoreMin,
      ),
      // The floor at this N, for information: the two ratios multiply to the target's (but rounding).
      info(
        `contract bound / redis-semaphore at N=${n}`,
        redis ? ratio(rate('contract', n), rate('semaphore', n)) : null,
      ),
      info(
        `agent-lock Redis @resource / contract bound at N=${n}`,
        redis ? ratio(rate('redisResource', n), rate('contract', n)) : null,
      ),
    );
  }
  verdicts.push(
    atLeast(
      'Redis own file path / Redis own @resource, N=8',
      redis ? ratio(rate('redisPath', 8), rate('redisResource', 8)) : null,
      t.redisPathVsResourceAt8Min,
    ),
    atLeast(
      'file store own @resource N=8 / N=1',
      ratio(rate('fileResource', 8), rate('fileResource', 1)),
      t.fileAt8VsAt1Min,
    ),
    atLeast(
      'file store own @resource / redis-semaphore, N=8',
      redis ? ratio(rate('fileResource', 8), rate('semaphore', 8)) : null,
      t.fileVsSemaphoreAt8Min,
    ),
    info(
      'file store own file path / own @resource, N=8',
      ratio(rate('filePath', 8), rate('fileResource', 8)),
    ),
  );
  return verdicts;
}
