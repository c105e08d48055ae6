// (d) acquire+release of one @resource on Redis against raw SET NX PX + compare-and-delete (the
//     two-round-trip bound), redlock and redis-semaphore    figures, no target
//     The bare bound does less than agent-lock's contract (no holder record, no fence), and the
//     libraries too, so since issue 19 these ratios are information: the target on one client's
//     rate is against a contract bound, in (k) (bench/scaling/one-client.ts).
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';
import type { BenchCase, BenchContext, Block, NotRun } from '../case.js';
import { info, notRun } from '../case.js';
import { expectStatus, openRedisLocks, timeLoop } from '../loops.js';
import type { RedisServer } from '../redis-server.js';
import { LEASE_MS } from '../settings.js';
import { median, round } from '../stats.js';

export interface RedisRateRow {
  key: string;
  name: string;
  ops: number;
  opsPerSec: number;
  minOpsPerSec: number;
  maxOpsPerSec: number;
  usPerOp: number;
}

export interface RedisRate {
  ran: true;
  rounds: number;
  contenders: RedisRateRow[];
  ratioVsBound: number;
  ratioVsRedlock: number;
  ratioVsSemaphore: number;
  ratioNoTtlVsBound: number;
}

/** A plain ioredis client for the baselines: one per contender, like agent-lock's own. */
async function baselineClient(server: RedisServer): Promise<Redis> {
  const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  return client;
}

const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

async function measureRedisRate(ctx: BenchContext, server: RedisServer): Promise<RedisRate> {
  const { settings } = ctx;
  const opened: (() => Promise<void>)[] = [];
  const store = ctx.makeTree('redis-rate');
  const locks = await openRedisLocks(ctx, server, 'rate', 'bench', store);
  opened.push(() => locks.close());
  const storeNoTtl = ctx.makeTree('redis-rate-nottl');
  const locksNoTtl = await openRedisLocks(ctx, server, 'rate-nottl', 'bench', storeNoTtl);
  opened.push(() => locksNoTtl.close());
  const clients: Redis[] = [];
  const client = async () => {
    const c = await baselineClient(server);
    clients.push(c);
    return c;
  };
  try {
    const ttl = LEASE_MS / 1000;
    const ours = async () => {
      expectStatus(await locks.acquire('@res', { ttl }), 'acquired', 'acquire @res');
      expectStatus(await locks.release('@res'), 'released', 'release @res');
    };
    const oursNoTtl = async () => {
      expectStatus(await locksNoTtl.acquire('@res'), 'acquired', 'acquire @res');
      expectStatus(await locksNoTtl.release('@res'), 'released', 'release @res');
    };

    // The bound: the fewest round trips a safe lock can take, a token set if absent with a lease,
    // then deleted only if it is still ours (the script is loaded once, so this is EVALSHA).
    const boundClient = await client();
    const cadSha = (await boundClient.script('LOAD', COMPARE_AND_DELETE)) as string;
    const bound = async () => {
      const token = randomBytes(16).toString('hex');
      const set = await boundClient.set('bench:bound:res', token, 'PX', LEASE_MS, 'NX');
      if (set !== 'OK') throw new Error(`bound: SET NX answered ${set}`);
      const deleted = await boundClient.evalsha(cadSha, 1, 'bench:bound:res', token);
      if (deleted !== 1) throw new Error(`bound: compare-and-delete answered ${deleted}`);
    };

    const redlock = new Redlock([await client()], { retryCount: 0 });
    redlock.on('error', () => {});
    const viaRedlock = async () => {
      const lock = await redlock.acquire(['bench:redlock:res'], LEASE_MS);
      await lock.release();
    };

    const semaphoreClient = await client();
    const viaSemaphore = async () => {
      const mutex = new Mutex(semaphoreClient, 'bench:semaphore:res', {
        lockTimeout: LEASE_MS,
        acquireTimeout: 1000,
        retryInterval: 10,
      });
      await mutex.acquire();
      await mutex.release();
    };

    const contenders = [
      { key: 'agentLock', name: `agent-lock acquire+release @res (ttl ${ttl} s)`, step: ours },
      { key: 'bound', name: 'bound: SET NX PX + EVALSHA compare-and-delete', step: bound },
      { key: 'redlock', name: 'redlock acquire+release (retryCount 0)', step: viaRedlock },
      { key: 'semaphore', name: 'redis-semaphore Mutex acquire+release', step: viaSemaphore },
      { key: 'agentLockNoTtl', name: 'agent-lock acquire+release @res (no ttl)', step: oursNoTtl },
    ].map((c) => ({ ...c, rates: [] as number[], ops: 0, ms: 0 }));
    for (const c of contenders) {
      for (let i = 0; i < settings.redisWarmup; i++) await c.step();
    }
    // Each round runs every contender once, starting one further along each time, so that machine
    // noise and drift spread over all of them; the figure is the median of the rounds' rates.
    for (let r = 0; r < settings.redisRounds; r++) {
      for (let j = 0; j < contenders.length; j++) {
        const c = contenders[(r + j) % contenders.length]!;
        const { ops, ms } = await timeLoop(c.step, Number.POSITIVE_INFINITY, settings.redisRoundSeconds);
        c.rates.push((ops / ms) * 1000);
        c.ops += ops;
        c.ms += ms;
      }
    }
    const rows: RedisRateRow[] = contenders.map((c) => ({
      key: c.key,
      name: c.name,
      ops: c.ops,
      opsPerSec: Math.round(median(c.rates)),
      minOpsPerSec: Math.round(Math.min(...c.rates)),
      maxOpsPerSec: Math.round(Math.max(...c.rates)),
      usPerOp: round(1e6 / median(c.rates), 1),
    }));
    const rate = (key: string) => rows.find((row) => row.key === key)!.opsPerSec;
    const ratio = (key: string) => round(rate('agentLock') / rate(key));
    return {
      ran: true,
      rounds: settings.redisRounds,
      contenders: rows,
      ratioVsBound: ratio('bound'),
      ratioVsRedlock: ratio('redlock'),
      ratioVsSemaphore: ratio('semaphore'),
      ratioNoTtlVsBound: round(rate('agentLockNoTtl') / rate('bound')),
    };
  } finally {
    for (const close of opened) await close();
    for (const c of clients) c.disconnect();
  }
}

const TITLE = '(d) sequential acquire+release of one @resource on Redis (one local redis-server)';
/** (d) has figures and no target (see the header); NOT RUN without a server. */
const FIGURES = 'figures';

export const redisResourceRate: BenchCase<RedisRate | NotRun> = {
  id: 'd',
  key: 'redisResourceRate',
  title: 'sequential acquire+release of one @resource on Redis',
  target: 'figures, no target (the target against a contract bound is in (k))',
  async run(ctx) {
    const { server, reason, announce } = await ctx.redis();
    if (server === null) {
      const d = notRun(reason);
      return {
        data: d,
        blocks: [{ kind: 'notRun', title: TITLE, reason }],
        summary: { redisResourceRate: 'NOT RUN' },
        summaryText: 'NOT RUN',
      };
    }
    const d = await measureRedisRate(ctx, server);
    const blocks: Block[] = [
      ...announce,
      {
        kind: 'table',
        title: `${TITLE}, median of ${d.rounds} interleaved rounds; figures, no target (the target against a contract bound is in (k))`,
        header: ['contender', 'ops', 'ops/s', 'min ops/s', 'max ops/s', 'us/op'],
        rows: d.contenders.map((r) => [
          r.name,
          r.ops,
          r.opsPerSec,
          r.minOpsPerSec,
          r.maxOpsPerSec,
          r.usPerOp.toFixed(1),
        ]),
        verdicts: [
          info('ratio agent-lock / bound', d.ratioVsBound),
          info('ratio agent-lock / redlock', d.ratioVsRedlock),
          info('ratio agent-lock / redis-semaphore', d.ratioVsSemaphore),
          info('ratio agent-lock (no ttl) / bound', d.ratioNoTtlVsBound),
        ],
      },
    ];
    return { data: d, blocks, summary: { redisResourceRate: FIGURES }, summaryText: FIGURES };
  },
};
