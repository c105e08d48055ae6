// (f) contended hand-off latency (issue 4): four forked processes (bench/handoff-worker.ts) loop
//     acquire (waiting) / brief hold / release on one @resource; a hand-off is the next grant less
//     the previous holder's release start (monotonic clock). agent-lock on Redis beside
//     redis-semaphore and redlock on the same server    target: p99 <= 2 ms
//     and a floor: the same four processes passing a bare SET NX PX key round a fixed ring (the
//     release script publishes to the next), the least a fair hand-off costs on this machine
//     agent-lock on the file store                       target: p99 <= 5 ms
//     Each round forks fresh workers and runs on past its measured hand-offs (51..550) to 3000:
//     those after the first 2500 are the "warm" figures, of long-running contenders (daemons,
//     `alock run`), once V8 has stopped compiling on background threads, which on two cores
//     competes with the hand-offs of fresh processes. A target passes only if both meet it.
//     Against the floor (issue 19): agent-lock Redis whole-round p99 / the floor's   target <= 1.25x
//     and its workers' CPU per hand-off / the floor's                                target <= 1.5x
// BENCH_HOLD_US=N sets how long the workers hold the lock (default 200 us of busy work).
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { BenchCase, BenchContext, Block, Cell, NotRun, Verdict } from '../case.js';
import { atMost, notRun, status, verdict } from '../case.js';
import {
  type GcPause,
  HANDOFF_WORKERS,
  type HandoffConfig,
  type HandoffRound,
  type HandoffStats,
  type HandoffWindow,
  handoffStats,
  type WorkerMessage,
  windowOf,
} from '../handoff-stats.js';
import type { RedisServer } from '../redis-server.js';
import { verdictLine } from '../report.js';
import { LEASE_MS, TARGETS } from '../settings.js';
import { round } from '../stats.js';

const HANDOFF_RESOURCE = '@handoff';
/** Busy work inside each hold, in microseconds (no event-loop turn while holding). */
const HANDOFF_HOLD_US = Number(process.env.BENCH_HOLD_US ?? 200);
/** redis-semaphore: its defaults (retryInterval 10 ms, lockTimeout 10 s replaced by LEASE_MS), but a
 *  long acquireTimeout so that a starved worker keeps trying instead of failing after 10 s. */
const SEMAPHORE_HANDOFF_OPTIONS = { acquireTimeout: 120_000 };
/** redlock: unlimited retries; retryDelay 200 ms and retryJitter 100 ms are its defaults. */
const REDLOCK_HANDOFF_SETTINGS = { retryCount: -1 };
/** Forked workers still running: killed on any way out (they also exit when their IPC closes). */
const liveWorkers = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of liveWorkers) child.kill('SIGKILL');
});

interface Worker {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  finished: boolean;
}

function forkHandoffWorker(ctx: BenchContext, index: number, config: HandoffConfig): Worker {
  const child = fork(path.join(ctx.outDir, 'handoff-worker.js'), [], {
    env: ctx.cleanEnv({ BENCH_HANDOFF_CONFIG: JSON.stringify({ ...config, index }) }),
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  liveWorkers.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk) => {
    if (stderr.length < 4000) stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      liveWorkers.delete(child);
      resolve({ code, signal });
    });
  });
  return { child, exited, stderr: () => stderr.trim(), finished: false };
}

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux); null elsewhere. */
function processCpuMs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

/**
 * One round: HANDOFF_WORKERS processes contend for the resource until the first
 * warmSkip + handoffsPerRound + 1 grants are in (or the round's time is up), then stop. Answers every
 * grant record, each tagged with its worker, and whether the round ran out of time.
 */
async function handoffRound(ctx: BenchContext, config: HandoffConfig): Promise<HandoffRound> {
  const { settings } = ctx;
  // Past the measured hand-offs to the end of the warm window (see handoffWarmSkip).
  const need = Math.max(settings.handoffWarmup, settings.handoffWarmSkip) + settings.handoffsPerRound + 1;
  const workers: Worker[] = [];
  const records: HandoffRound['records'] = [];
  const timers: NodeJS.Timeout[] = [];
  let timedOut = false;
  let cpuMs = 0;
  let loopGrants = 0;
  const gcPauses: GcPause[] = [];
  const serverCpu = config.serverPid ? processCpuMs(config.serverPid) : null;
  try {
    await new Promise<void>((resolve, reject) => {
      let ready = 0;
      let done = 0;
      let stopped = false;
      const stop = () => {
        if (stopped) return;
        stopped = true;
        for (const w of workers) if (w.child.connected) w.child.send({ type: 'stop' });
        // Stopping takes at most a few hand-offs; a round that cannot stop is a failure.
        timers.push(setTimeout(() => reject(new Error('workers did not stop within 15 s')), 15_000));
      };
      for (let i = 0; i < HANDOFF_WORKERS; i++) {
        const w = forkHandoffWorker(ctx, i, config);
        workers.push(w);
        w.child.on('message', (message: WorkerMessage) => {
          if (message.type === 'ready' && ++ready === HANDOFF_WORKERS) {
            for (const other of workers) other.child.send({ type: 'go' });
            timers.push(
              setTimeout(() => {
                timedOut = true;
                stop();
              }, settings.handoffRoundSeconds * 1000),
            );
          } else if (message.type === 'records') {
            for (const r of message.records) records.push({ ...r, worker: i });
            if (records.length >= need) stop();
          } else if (message.type === 'done') {
            w.finished = true;
            cpuMs += message.cpuMs;
            loopGrants += message.grants;
            for (const [at, ms] of message.gcPauses ?? []) gcPauses.push({ worker: i, at, ms });
            if (++done === HANDOFF_WORKERS) resolve();
          } else if (message.type === 'error') {
            reject(new Error(`worker ${i}: ${message.message.split('\n').slice(0, 3).join(' | ')}`));
          }
        });
        // Messages may still be in flight when 'exit' fires: judge a moment later.
        w.exited.then(({ code, signal }) => {
          setTimeout(() => {
            if (!w.finished)
              reject(new Error(`worker ${i} exited (${code ?? signal}) early: ${w.stderr().slice(-500)}`));
          }, 200);
        });
      }
      timers.push(setTimeout(() => reject(new Error('workers not ready within 30 s')), 30_000));
    });
  } finally {
    for (const t of timers) clearTimeout(t);
    // Give finished workers a moment to exit on their own, then kill whatever is left.
    const grace = new Promise((resolve) => setTimeout(resolve, 2000).unref());
    await Promise.race([Promise.all(workers.map((w) => w.exited)), grace]);
    for (const w of workers) if (liveWorkers.has(w.child)) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
  }
  const serverCpuMs =
    serverCpu === null || config.serverPid === null
      ? null
      : (processCpuMs(config.serverPid) ?? 0) - serverCpu;
  return { records, timedOut, cpuMs, serverCpuMs, loopGrants, gcPauses };
}

type ContenderRow = { key: string; name: string; error: string | null } & Partial<HandoffStats> & {
    warm: HandoffWindow | null;
    whole: HandoffWindow | null;
  };

interface RedisHandoff {
  ran: true;
  p99Ms: number | null;
  target: string;
  pass: boolean;
  warmP99Ms: number | null;
  semaphoreP99Ms: number | null;
  redlockP99Ms: number | null;
  semaphoreWarmP99Ms: number | null;
  redlockWarmP99Ms: number | null;
  floorP99Ms: number | null;
  floorWarmP99Ms: number | null;
  wholeP99Ms: number | null;
  floorWholeP99Ms: number | null;
  ratioSemaphoreP99ToOurs: number | null;
  ratioRedlockP99ToOurs: number | null;
  /** Issue 19: whole-round p99 and worker CPU per hand-off against the floor ring's. */
  floorRatios: Verdict[];
}

export interface Handoff {
  ran: true;
  workers: number;
  resource: string;
  holdUs: number;
  rounds: number;
  handoffsPerRound: number;
  warmupPerRound: number;
  warmSkipPerRound: number;
  semaphoreOptions: Record<string, number>;
  redlockSettings: Record<string, number>;
  contenders: ContenderRow[];
  file: { p99Ms: number | null; warmP99Ms: number | null; target: string; pass: boolean };
  redis: RedisHandoff | NotRun;
}

async function handoff(ctx: BenchContext, server: RedisServer | null, reason: string): Promise<Handoff> {
  const { settings } = ctx;
  const base = {
    resource: HANDOFF_RESOURCE,
    holdUs: HANDOFF_HOLD_US,
    leaseMs: LEASE_MS,
    serverPid: server?.pid ?? null,
    workers: HANDOFF_WORKERS,
  };
  const contenders: {
    key: string;
    name: string;
    byFence: boolean;
    config: (r: number) => HandoffConfig;
  }[] = [
    {
      key: 'agentLockFile',
      name: `agent-lock file store (wait, ttl ${LEASE_MS / 1000} s)`,
      byFence: true,
      config: (r) => {
        const { tree, store } = ctx.makeTree(`handoff-file-${r}`);
        return {
          ...base,
          contender: 'agentLockFile',
          serverPid: null,
          dir: tree,
          storeDir: store,
          env: ctx.cleanEnv({}),
        };
      },
    },
  ];
  if (server !== null) {
    contenders.push(
      {
        key: 'agentLockRedis',
        name: `agent-lock Redis (wait, ttl ${LEASE_MS / 1000} s)`,
        byFence: true,
        config: (r) => {
          const { tree, store } = ctx.makeTree(`handoff-redis-${r}`);
          return {
            ...base,
            contender: 'agentLockRedis',
            redisUrl: server.url,
            dir: tree,
            storeDir: store,
            env: ctx.cleanEnv({ AGENT_LOCK_REDIS_PREFIX: `${ctx.benchPrefix}-handoff-${r}` }),
          };
        },
      },
      {
        key: 'semaphore',
        name: 'redis-semaphore Mutex (retryInterval 10 ms, default)',
        byFence: false,
        config: (r) => ({
          ...base,
          contender: 'semaphore',
          resource: `bench:handoff:semaphore:${r}`,
          redisUrl: server.url,
          semaphoreOptions: SEMAPHORE_HANDOFF_OPTIONS,
        }),
      },
      {
        key: 'redlock',
        name: 'redlock (retryCount -1, retryDelay 200 ms, jitter 100 ms)',
        byFence: false,
        config: (r) => ({
          ...base,
          contender: 'redlock',
          resource: `bench:handoff:redlock:${r}`,
          redisUrl: server.url,
          redlockSettings: REDLOCK_HANDOFF_SETTINGS,
        }),
      },
      {
        key: 'floor',
        name: 'floor: bare ioredis ring (SET NX PX; DEL+PUBLISH)',
        byFence: false,
        config: (r) => ({
          ...base,
          contender: 'floor',
          resource: `bench:handoff:floor:${r}`,
          redisUrl: server.url,
        }),
      },
    );
  }
  const state = contenders.map((c) => ({ ...c, rounds: [] as HandoffRound[], error: null as string | null }));
  const wholeCount = settings.handoffWarmSkip + settings.handoffsPerRound - settings.handoffWarmup;
  // Rounds run every contender once, starting one further along each time (noise spreads over all).
  for (let r = 0; r < settings.handoffRounds; r++) {
    for (let j = 0; j < state.length; j++) {
      const c = state[(r + j) % state.length]!;
      if (c.error !== null) continue;
      try {
        c.rounds.push(await handoffRound(ctx, c.config(r)));
      } catch (error) {
        c.error = (error as Error).message;
      }
    }
  }
  const stats = (c: (typeof state)[number], skip: number, count = settings.handoffsPerRound) =>
    handoffStats(c.rounds, c.byFence, skip, count);
  const rows: ContenderRow[] = state.map((c) => ({
    key: c.key,
    name: c.name,
    error: c.error,
    ...(c.error === null ? stats(c, settings.handoffWarmup) : {}),
    warm: c.error === null ? windowOf(stats(c, settings.handoffWarmSkip)) : null,
    // Every hand-off after the warm-up, the unmeasured middle of the rounds included: how far the
    // two windows above are from a whole run's tail (info, no target).
    whole: c.error === null ? windowOf(stats(c, settings.handoffWarmup, wholeCount)) : null,
  }));
  const row = (key: string) => rows.find((x) => x.key === key)!;
  // Both windows whole (a round that timed out may have stopped short of the warm one) and with
  // never two holders at once.
  const full = settings.handoffRounds * settings.handoffsPerRound;
  const ok = (x: ContenderRow | undefined): boolean =>
    x !== undefined &&
    x.error === null &&
    x.handoffs === full &&
    x.overlaps === 0 &&
    x.warm?.handoffs === full &&
    x.warm.overlaps === 0;
  const worst = (x: ContenderRow) => Math.max(x.p99Ms ?? Number.NaN, x.warm?.p99Ms ?? Number.NaN);
  const file = row('agentLockFile');
  const fileResult = {
    p99Ms: file.p99Ms ?? null,
    warmP99Ms: file.warm?.p99Ms ?? null,
    target: `p99 <= ${TARGETS.handoffFileP99MaxMs} ms`,
    pass: ok(file) && worst(file) <= TARGETS.handoffFileP99MaxMs,
  };
  let redisResult: RedisHandoff | NotRun = notRun(reason);
  if (server !== null) {
    const ours = row('agentLockRedis');
    const ratio = (key: string) => {
      const other = row(key);
      return ok(ours) && ok(other) && ours.p99Ms! > 0 ? round(other.p99Ms! / ours.p99Ms!) : null;
    };
    redisResult = {
      ran: true,
      p99Ms: ours.p99Ms ?? null,
      target: `p99 <= ${TARGETS.handoffRedisP99MaxMs} ms`,
      pass: ok(ours) && worst(ours) <= TARGETS.handoffRedisP99MaxMs,
      warmP99Ms: ours.warm?.p99Ms ?? null,
      semaphoreP99Ms: row('semaphore').p99Ms ?? null,
      redlockP99Ms: row('redlock').p99Ms ?? null,
      semaphoreWarmP99Ms: row('semaphore').warm?.p99Ms ?? null,
      redlockWarmP99Ms: row('redlock').warm?.p99Ms ?? null,
      floorP99Ms: row('floor').p99Ms ?? null,
      floorWarmP99Ms: row('floor').warm?.p99Ms ?? null,
      wholeP99Ms: ours.whole?.p99Ms ?? null,
      floorWholeP99Ms: row('floor').whole?.p99Ms ?? null,
      ratioSemaphoreP99ToOurs: ratio('semaphore'),
      ratioRedlockP99ToOurs: ratio('redlock'),
      floorRatios: handoffFloorRatios(rows),
    };
  }
  return {
    ran: true,
    workers: HANDOFF_WORKERS,
    resource: HANDOFF_RESOURCE,
    holdUs: HANDOFF_HOLD_US,
    rounds: settings.handoffRounds,
    handoffsPerRound: settings.handoffsPerRound,
    warmupPerRound: settings.handoffWarmup,
    warmSkipPerRound: settings.handoffWarmSkip,
    semaphoreOptions: { retryInterval: 10, lockTimeout: LEASE_MS, ...SEMAPHORE_HANDOFF_OPTIONS },
    redlockSettings: { retryDelay: 200, retryJitter: 100, ...REDLOCK_HANDOFF_SETTINGS },
    contenders: rows,
    file: fileResult,
    redis: redisResult,
  };
}

/**
 * Issue 19's hand-off targets, two ratios of figures (f) already has. "Whole-round p99" is the
 * `whole` window: the p99 of every hand-off of the rounds after the warm-up (the unmeasured middle
 * included), which is the tail a long-running contender sees; both contenders' figures come from
 * the same interleaved rounds. CPU is the workers' CPU (user + system, from 'go' to their last
 * release) per hand-off. A contender that errored leaves its ratio unmeasured (NOT RUN).
 */
function handoffFloorRatios(rows: readonly ContenderRow[]): Verdict[] {
  const row = (key: string) => rows.find((r) => r.key === key && r.error === null);
  const ours = row('agentLockRedis');
  const floor = row('floor');
  const ratio = (a: number | null | undefined, b: number | null | undefined) =>
    a === null || a === undefined || b === null || b === undefined || b <= 0 ? null : round(a / b);
  return [
    atMost(
      'agent-lock Redis whole-round p99 / floor ring whole-round p99',
      ratio(ours?.whole?.p99Ms, floor?.whole?.p99Ms),
      TARGETS.handoffWholeP99VsFloorMax,
    ),
    atMost(
      'agent-lock Redis worker CPU per hand-off / floor ring',
      ratio(ours?.workerCpuMsPerHandoff, floor?.workerCpuMsPerHandoff),
      TARGETS.handoffCpuVsFloorMax,
    ),
  ];
}

const fmt = (value: number | null | undefined, digits = 3) =>
  value === null || value === undefined ? '-' : value.toFixed(digits);
const pct = (share: number | null | undefined) =>
  share === null || share === undefined ? '-' : `${(share * 100).toFixed(1)}%`;

function handoffBlocks(f: Handoff): Block[] {
  const blocks: Block[] = [];
  const fTitle = `(f) contended hand-off latency: ${f.workers} processes on one ${f.resource}, hold ${f.holdUs} us, ${f.rounds} round(s) of ${f.handoffsPerRound} hand-offs (+${f.warmupPerRound} warmup)`;
  blocks.push({
    kind: 'table',
    title: `${fTitle}; hand-off = next grant - previous holder's release start`,
    header: [
      'contender',
      'hand-offs',
      'p50 ms',
      'p99 ms',
      'max ms',
      'self',
      'cross p50',
      'cross p99',
      'grants per worker',
    ],
    rows: f.contenders.map((r): Cell[] =>
      r.error !== null
        ? [r.name, 'ERROR', '-', '-', '-', '-', '-', '-', r.error.slice(0, 60)]
        : [
            r.name,
            r.handoffs!,
            fmt(r.p50Ms),
            fmt(r.p99Ms),
            fmt(r.maxMs),
            `${r.selfHandoffs} (${((r.selfShare ?? Number.NaN) * 100).toFixed(1)}%)`,
            fmt(r.crossP50Ms),
            fmt(r.crossP99Ms),
            r.grantsPerWorker!.join('/'),
          ],
    ),
  });
  const ran = f.contenders.filter((r) => r.error === null);
  /** One row per contender of a window of the rounds (`warm` or `whole`). */
  const windowTable = (title: string, key: 'warm' | 'whole'): Block => ({
    kind: 'table',
    title,
    header: ['contender', 'hand-offs', 'p50 ms', 'p99 ms', 'max ms', 'self'],
    rows: ran.map((r) => [
      r.name,
      r[key]!.handoffs,
      fmt(r[key]!.p50Ms),
      fmt(r[key]!.p99Ms),
      fmt(r[key]!.maxMs),
      `${((r[key]!.selfShare ?? Number.NaN) * 100).toFixed(1)}%`,
    ]),
  });
  blocks.push(
    windowTable(
      `  warm processes: hand-offs ${f.warmSkipPerRound + 1}..${f.warmSkipPerRound + f.handoffsPerRound} of the same rounds (V8 done compiling in the background)`,
      'warm',
    ),
    windowTable(
      `  whole rounds: hand-offs ${f.warmupPerRound + 1}..${f.warmSkipPerRound + f.handoffsPerRound}, the unmeasured middle included (info)`,
      'whole',
    ),
  );
  blocks.push({
    kind: 'table',
    title: '  where the time goes: release call, release reply -> next grant, store decisions per grant',
    header: [
      'contender',
      'release p50',
      'release p99',
      'after p50',
      'after p99',
      'attempts mean',
      'max',
      'mean in slowest 1%',
      'worker cpu ms/hand-off',
      'redis cpu ms/hand-off',
    ],
    rows: ran.map((r) => [
      r.name,
      fmt(r.releaseP50Ms),
      fmt(r.releaseP99Ms),
      fmt(r.afterReleaseP50Ms),
      fmt(r.afterReleaseP99Ms),
      fmt(r.attemptsMean, 2),
      r.attemptsMax ?? '-',
      fmt(r.attemptsMeanSlowest1pc, 2),
      fmt(r.workerCpuMsPerHandoff),
      fmt(r.serverCpuMsPerHandoff),
    ]),
  });
  blocks.push({
    kind: 'table',
    title:
      '  garbage collection in the workers: pauses, and hand-offs a pause of the releaser or the next holder overlaps',
    header: [
      'contender',
      'pauses per 1000 hand-offs',
      'pause p50 ms',
      'hand-offs overlapped',
      'of the slowest 1%',
    ],
    rows: ran.map((r) => [
      r.name,
      fmt(r.gcPausesPer1000, 1),
      fmt(r.gcPauseP50Ms),
      pct(r.gcPausedShare),
      pct(r.gcPausedShareSlowest1pc),
    ]),
  });
  const traced = ran.filter((r) => r.wakesMean !== null);
  if (traced.length > 0)
    blocks.push({
      kind: 'table',
      title:
        '  agent-lock waits: wake-ups per grant, watchWaiter() set-up per waiting acquire, release start -> last wake, last wake -> grant',
      header: [
        'contender',
        'wakes mean',
        'in slowest 1%',
        'subscribe p50',
        'subscribe p99',
        'to wake p50',
        'to wake p99',
        'wake->grant p50',
        'wake->grant p99',
        'commits/acquire',
        'commits/release',
        'mutex p99 acq/rel',
      ],
      rows: traced.map((r) => [
        r.name,
        fmt(r.wakesMean, 2),
        fmt(r.wakesMeanSlowest1pc, 2),
        fmt(r.subscribeP50Ms),
        fmt(r.subscribeP99Ms),
        fmt(r.wakeLagP50Ms),
        fmt(r.wakeLagP99Ms),
        fmt(r.afterWakeP50Ms),
        fmt(r.afterWakeP99Ms),
        fmt(r.acquireTripsMean, 2),
        fmt(r.releaseTripsMean, 2),
        r.acquireMutexP99Ms === null ? '-' : `${fmt(r.acquireMutexP99Ms)}/${fmt(r.releaseMutexP99Ms)}`,
      ]),
    });
  const lines: string[] = [];
  const problems = ran.filter((r) => (r.overlaps ?? 0) > 0 || (r.timedOutRounds ?? 0) > 0);
  for (const r of problems)
    lines.push(`  !!! ${r.name}: ${r.overlaps} overlapping grants, ${r.timedOutRounds} round(s) out of time`);
  lines.push(
    `  redis-semaphore: ${JSON.stringify(f.semaphoreOptions)}; redlock: ${JSON.stringify(f.redlockSettings)}`,
  );
  if (f.redis.ran) {
    const redis = f.redis;
    lines.push(
      `  agent-lock Redis p99: ${fmt(redis.p99Ms)} ms, warm ${fmt(redis.warmP99Ms)} ms   target ${redis.target} (both)   ${verdict(redis.pass)}`,
      `    redis-semaphore p99 ${fmt(redis.semaphoreP99Ms)} ms = ${fmt(redis.ratioSemaphoreP99ToOurs, 2)}x agent-lock's   (info; warm ${fmt(redis.semaphoreWarmP99Ms)} ms)`,
      `    redlock p99 ${fmt(redis.redlockP99Ms)} ms = ${fmt(redis.ratioRedlockP99ToOurs, 2)}x agent-lock's   (info; warm ${fmt(redis.redlockWarmP99Ms)} ms)`,
      `    floor (a fair ring of bare ioredis calls) p99 ${fmt(redis.floorP99Ms)} ms, warm ${fmt(redis.floorWarmP99Ms)} ms: what this machine allows a fair hand-off   (info)`,
      `    whole rounds (every hand-off after the warm-up): agent-lock p99 ${fmt(redis.wholeP99Ms)} ms, floor ${fmt(redis.floorWholeP99Ms)} ms   (info)`,
      ...redis.floorRatios.map(verdictLine),
    );
  } else {
    lines.push(`  agent-lock Redis, redis-semaphore, redlock: NOT RUN (${f.redis.reason})`);
  }
  lines.push(
    `  agent-lock file p99: ${fmt(f.file.p99Ms)} ms, warm ${fmt(f.file.warmP99Ms)} ms   target ${f.file.target} (both)   ${verdict(f.file.pass)}`,
    '',
  );
  blocks.push({ kind: 'lines', lines });
  if (!f.redis.ran)
    blocks.push({ kind: 'stderrWhenJson', message: `bench: (f) on Redis NOT RUN: ${f.redis.reason}` });
  return blocks;
}

export const handoffCase: BenchCase<Handoff> = {
  id: 'f',
  key: 'handoff',
  title: 'contended hand-off latency, four processes on one @resource',
  target: `p99 <= ${TARGETS.handoffRedisP99MaxMs} ms on Redis, <= ${TARGETS.handoffFileP99MaxMs} ms on the file store (fresh and warm); on Redis, whole-round p99 <= ${TARGETS.handoffWholeP99VsFloorMax}x and worker CPU per hand-off <= ${TARGETS.handoffCpuVsFloorMax}x the floor's`,
  async run(ctx) {
    const { server, reason, announce } = await ctx.redis();
    const f = await handoff(ctx, server, reason);
    const summary = { handoffRedis: status(f.redis), handoffFile: verdict(f.file.pass) };
    return {
      data: f,
      blocks: [...announce, ...handoffBlocks(f)],
      summary,
      summaryText: `Redis ${summary.handoffRedis} file ${summary.handoffFile}`,
    };
  },
};
