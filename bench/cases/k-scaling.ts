// (k) stores that scale with the number of agents (issue 19). Measured, all in one run:
//   1. N = 1, 2, 4, 8 forked processes (bench/scaling-worker.ts), each looping acquire+release of
//      a lock no other process wants: its own @resource on agent-lock Redis, on agent-lock's file
//      store (one store) and redis-semaphore's Mutex (same server); the contract bound of part 2
//      on a key of its own (its record as long as agent-lock's for a worker's @resource, measured
//      before the workers start), so that each N shows the floor beside the libraries; then its
//      own file path (src/w<i>.ts) in one tree, agent-lock Redis and file. Aggregate ops/s (median
//      of the rounds' sums of each process's rate) and p99 of one acquire+release; beside them, for
//      information, the workers' CPU time per pair and, on Redis, the server's
//      (bench/scaling/throughput.ts).
//        Redis own @resource at every N / redis-semaphore at that N     target >= 0.8x
//        contract bound / redis-semaphore, and Redis own @resource /
//        contract bound, at every N                                      information
//        Redis own file path at N=8 / Redis own @resource at N=8         target >= 0.5x
//        file store own @resource at N=8 / its own at N=1                target >= 0.5x
//        file store own @resource at N=8 / redis-semaphore at N=8        target >= 1.0x
//   2. one client: agent-lock @resource acquire+release against a contract bound, the least a lock
//      with agent-lock's contract costs (a holder record under a lease and a fence, then a
//      compare-and-delete); beside it (d)'s bare bound, for information
//      (bench/scaling/one-client.ts)                                     target >= 0.9x the contract
//   3. messages per commit: 8 processes each hold 4 leases (so each listens for changes) and churn
//      acquire+release of other @resources of their own; pub/sub messages the processes receive /
//      commits the store made (bench/scaling/messages.ts)               target <= 2
//   Issue 19's hand-off targets are ratios of (f)'s own figures: they are verdicts of (f).
// Settings: SETTINGS.scaling* (BENCH_QUICK: 2 rounds of 0.5 s per point; else 2 rounds of 1.5 s).
// Without a redis-server only the file-store points run (the rest NOT RUN). A worker that fails or
// stops answering ends the section with an ERROR after at most 60 s, not the whole bench.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { BenchCase, Block, Cell, NotRun, Verdict } from '../case.js';
import { NO_TARGET, notRun, verdict } from '../case.js';
import { verdictLine } from '../report.js';
import { LEASE_MS, TARGETS } from '../settings.js';
import type { AgentLockRecord } from '../scaling/contract.js';
import { type Messages, messagesPerCommit } from '../scaling/messages.js';
import { type OneClient, oneClient } from '../scaling/one-client.js';
import { startPool } from '../scaling/pool.js';
import type { StoreKey } from '../scaling/protocol.js';
import {
  CONTENDERS,
  type ThroughputRow,
  throughput,
  throughputVerdicts,
  WORKER_COUNTS,
  workersRecord,
} from '../scaling/throughput.js';

const STORE_KEYS: readonly StoreKey[] = [
  'redisResource',
  'fileResource',
  'redisPath',
  'filePath',
  'messages',
];

type PartNotRun = NotRun & { verdicts: Verdict[] };

interface ScalingSettings {
  rounds: number;
  pointSeconds: number;
  warmupMs: number;
  oneClientSeconds: number;
  churnSeconds: number;
}

export type Scaling =
  | {
      ran: true;
      quick: boolean;
      settings: ScalingSettings;
      workerCounts: number[];
      targets: typeof TARGETS.scaling;
      throughput: ThroughputRow[];
      /** The size of the contract bound's record in the workers (null without Redis). */
      contractRecord: AgentLockRecord | null;
      oneClient: OneClient | PartNotRun;
      messages: Messages | PartNotRun;
      verdicts: Verdict[];
      /** Every verdict with a target met; null when one could not be measured. */
      pass: boolean | null;
    }
  | {
      ran: false;
      error: string;
      quick: boolean;
      settings: ScalingSettings;
      verdicts: Verdict[];
      pass: false;
    };

const TITLE = '(k) N processes, each acquire+release of its own lock';

/** `points`: the verdicts of part 1, printed under its table. */
function scalingBlocks(k: Scaling, points: Verdict[], redisReason: string): Block[] {
  if (!k.ran) {
    return [
      { kind: 'lines', lines: [TITLE, `  !!! ERROR: ${k.error}`, ''] },
      { kind: 'stderrWhenJson', message: `bench: (k) ERROR: ${k.error}` },
    ];
  }
  const s = k.settings;
  const fixed = (value: number | null) => (value === null ? '-' : value.toFixed(3));
  const cpu = (value: number | null) => (value === null ? '-' : value.toFixed(1));
  const rec = k.contractRecord;
  const record =
    rec === null
      ? ''
      : `; the contract bound's record: ${rec.bytes} bytes, as agent-lock's for a worker's @resource${rec.found ? '' : ' (NOT FOUND: assumed)'}`;
  const blocks: Block[] = [
    {
      kind: 'table',
      title: `${TITLE}, ${s.rounds} interleaved round(s) of ${s.pointSeconds} s per point (aggregate ops/s: median of the rounds; p99 of one acquire+release${record})`,
      header: [
        'contender',
        'N',
        'ops',
        'ops/s',
        'min ops/s',
        'max ops/s',
        'p50 ms',
        'p99 ms',
        'client CPU/pair µs',
        'Redis CPU/pair µs',
      ],
      rows: k.throughput.map((r): Cell[] => [
        r.name,
        r.workers,
        r.ops,
        r.opsPerSec,
        r.minOpsPerSec,
        r.maxOpsPerSec,
        fixed(r.p50Ms),
        fixed(r.p99Ms),
        cpu(r.clientCpuUsPerPair),
        cpu(r.redisCpuUsPerPair),
      ]),
      verdicts: points,
    },
  ];
  const one = k.oneClient;
  if (one.ran) {
    blocks.push({
      kind: 'table',
      title: `  one client against the contract bound, median of ${one.rounds} interleaved rounds (agent-lock's record: ${one.recordBytes} bytes${one.recordFound ? '' : ', NOT FOUND: assumed'})`,
      header: ['contender', 'ops', 'ops/s', 'p50 ms', 'p99 ms'],
      rows: one.rows.map((r) => [r.name, r.ops, r.opsPerSec, r.p50Ms.toFixed(3), r.p99Ms.toFixed(3)]),
      verdicts: one.verdicts,
    });
  }
  const m = k.messages;
  if (m.ran) {
    blocks.push({
      kind: 'lines',
      lines: [
        `  messages per commit: ${m.processes} processes x ${m.leasesPerProcess} leases, churning ${m.seconds} s: ${m.commits} commits (counted by ${m.commitsCountedBy}; workers: ${m.workerCommits}), ${m.messages} pub/sub messages received`,
        `    ${m.publishCalls} PUBLISH calls (${m.publishPerCommit}/commit), ${m.evalshaPerCommit} EVALSHA/commit, ${m.channels} channels with ${m.subscriptions} subscriptions while held`,
        ...m.verdicts.map(verdictLine),
        '',
      ],
    });
  }
  if (!one.ran || !m.ran) {
    blocks.push({
      kind: 'notRun',
      title: '(k) on Redis: its points above, one client against the contract bound, messages per commit',
      reason: redisReason,
    });
  }
  return blocks;
}

export const scaling: BenchCase<Scaling> = {
  id: 'k',
  key: 'scaling',
  title: 'stores that scale with the number of agents',
  target: `own locks of N processes: Redis >= ${TARGETS.scaling.redisVsSemaphoreMin}x redis-semaphore; one client >= ${TARGETS.scaling.oneClientVsContractMin}x the contract bound; <= ${TARGETS.scaling.messagesPerCommitMax} messages per commit`,
  async run(ctx) {
    const { settings } = ctx;
    const scalingSettings: ScalingSettings = {
      rounds: settings.scalingRounds,
      pointSeconds: settings.scalingPointSeconds,
      warmupMs: settings.scalingWarmupMs,
      oneClientSeconds: settings.scalingOneClientSeconds,
      churnSeconds: settings.scalingChurnSeconds,
    };
    const { server, reason, announce } = await ctx.redis();
    const redisUrl = server?.url ?? null;
    const { tree } = ctx.makeTree('scaling');
    mkdirSync(path.join(tree, 'src'), { recursive: true });
    const stores = {} as Record<StoreKey, string>;
    const prefixes = {} as Record<StoreKey, string>;
    for (const key of STORE_KEYS) {
      stores[key] = path.join(ctx.scratch, 'scaling', `store-${key}`);
      mkdirSync(stores[key], { recursive: true });
      prefixes[key] = `${ctx.benchPrefix}-scaling-${key}`;
    }
    const contenders = CONTENDERS.filter((c) => redisUrl !== null || !c.redis);
    let k: Scaling;
    let points: Verdict[] = [];
    let pool: Awaited<ReturnType<typeof startPool>> | null = null;
    try {
      const contractRecord =
        redisUrl === null
          ? null
          : await workersRecord(
              redisUrl,
              ctx.makeTree('scaling-record'),
              `${ctx.benchPrefix}-scaling-record`,
              ctx.cleanEnv(),
              LEASE_MS,
            );
      pool = await startPool(
        path.join(ctx.outDir, 'scaling-worker.js'),
        Math.max(...WORKER_COUNTS),
        {
          redisUrl,
          tree,
          stores,
          prefixes,
          leaseMs: LEASE_MS,
          contractRecordBytes: contractRecord?.bytes ?? null,
          env: ctx.cleanEnv(),
        },
        ctx.cleanEnv(),
      );
      const rows = await throughput(pool, contenders, settings, redisUrl);
      const partNotRun = (): PartNotRun => ({ ...notRun(reason), verdicts: [] });
      const one =
        redisUrl === null
          ? partNotRun()
          : await oneClient(
              redisUrl,
              ctx.makeTree('scaling-one'),
              `${ctx.benchPrefix}-scaling-one`,
              ctx.cleanEnv(),
              settings,
            );
      const messages =
        redisUrl === null
          ? partNotRun()
          : await messagesPerCommit(pool, redisUrl, prefixes.messages, settings);
      points = throughputVerdicts(rows, redisUrl !== null);
      const verdicts = [...points, ...one.verdicts, ...messages.verdicts];
      const judged = verdicts.filter((v) => v.target !== NO_TARGET);
      k = {
        ran: true,
        quick: ctx.quick,
        settings: scalingSettings,
        workerCounts: WORKER_COUNTS,
        targets: TARGETS.scaling,
        throughput: rows,
        contractRecord,
        oneClient: one,
        messages,
        verdicts,
        pass: judged.some((v) => v.pass === null) ? null : judged.every((v) => v.pass),
      };
    } catch (error) {
      // A broken section is reported (never a PASS) and the rest of the bench goes on.
      const message = String((error as Error | undefined)?.message ?? error);
      k = {
        ran: false,
        error: message,
        quick: ctx.quick,
        settings: scalingSettings,
        verdicts: [],
        pass: false,
      };
    } finally {
      await pool?.close();
    }
    const word = k.pass === null ? 'NOT RUN' : verdict(k.pass);
    return {
      data: k,
      blocks: [...announce, ...scalingBlocks(k, points, reason)],
      summary: { scaling: word },
      summaryText: word,
    };
  },
};
