// Section (f)'s records and their statistics: what a hand-off worker sends, and the figures of a
// window of the rounds.
import { percentile, round } from './stats.js';

export const HANDOFF_WORKERS = 4;

/** What the parent tells each forked worker (BENCH_HANDOFF_CONFIG, JSON). */
export interface HandoffConfig {
  contender: 'agentLockFile' | 'agentLockRedis' | 'semaphore' | 'redlock' | 'floor';
  resource: string;
  holdUs: number;
  leaseMs: number;
  serverPid: number | null;
  workers: number;
  index?: number;
  redisUrl?: string;
  dir?: string;
  storeDir?: string;
  env?: NodeJS.ProcessEnv;
  semaphoreOptions?: Record<string, number>;
  redlockSettings?: Record<string, number>;
}

/** agent-lock only: what its waits and commits did for one grant. */
export interface GrantTrace {
  wakes: number;
  lastWake: bigint | null;
  subscribeMs: number;
  acquireTrips: number;
  acquireMutexMs: number;
  releaseTrips?: number;
  releaseMutexMs?: number;
}

/** One grant, on process.hrtime.bigint() (see bench/handoff-worker.ts). */
export interface GrantRecord {
  order: number | null;
  granted: bigint;
  relStart: bigint;
  relEnd: bigint;
  attempts: number | null;
  trace: GrantTrace | null;
}

export type WorkerMessage =
  | { type: 'ready'; index: number }
  | { type: 'records'; index: number; records: GrantRecord[] }
  | { type: 'done'; index: number; cpuMs: number; grants: number; gcPauses: [bigint, number][] }
  | { type: 'error'; index: number; message: string };

export interface GcPause {
  worker: number;
  at: bigint;
  ms: number;
}

export interface HandoffRound {
  records: (GrantRecord & { worker: number })[];
  timedOut: boolean;
  cpuMs: number;
  serverCpuMs: number | null;
  loopGrants: number;
  gcPauses: GcPause[];
}

const msOf = (ns: bigint) => Number(ns) / 1e6;

export type HandoffStats = ReturnType<typeof handoffStats>;

/**
 * Pairs each grant with the one before it (agent-lock: fence order; libraries: granted time), after
 * `skip` grants of each round: hand-off latency = granted - the previous holder's release start.
 */
export function handoffStats(rounds: HandoffRound[], byFence: boolean, skip: number, count: number) {
  const all: { latency: number; attempts: number | null; wakes: number | null; paused: boolean }[] = [];
  const cross: number[] = [];
  const release: number[] = [];
  const afterRelease: number[] = [];
  const attempts: number[] = [];
  const wakes: number[] = [];
  const subscribe: number[] = [];
  const wakeLag: number[] = [];
  const afterWake: number[] = [];
  const mutexAcquire: number[] = [];
  const mutexRelease: number[] = [];
  const acquireTrips: number[] = [];
  const releaseTrips: number[] = [];
  const perWorker: number[] = new Array(HANDOFF_WORKERS).fill(0);
  let self = 0;
  let overlaps = 0;
  const pauses: number[] = [];
  for (const { records, gcPauses = [] } of rounds) {
    const sorted = [...records].sort((x, y) => {
      const [a, b] = byFence ? [x.order!, y.order!] : [x.granted, y.granted];
      return a < b ? -1 : a > b ? 1 : 0;
    });
    const end = Math.min(sorted.length, skip + count + 1);
    if (end > skip + 1) {
      const from = sorted[skip]!.relStart;
      const to = sorted[end - 1]!.granted;
      for (const g of gcPauses) if (g.at < to && g.at > from) pauses.push(g.ms);
    }
    for (let i = skip + 1; i < end; i++) {
      const prev = sorted[i - 1]!;
      const cur = sorted[i]!;
      const latency = msOf(cur.granted - prev.relStart);
      if (latency < 0) overlaps += 1;
      // A pause of the releasing or the next holding process inside this hand-off.
      const paused = gcPauses.some(
        (g) =>
          (g.worker === prev.worker || g.worker === cur.worker) &&
          g.at < cur.granted &&
          g.at + BigInt(Math.round(g.ms * 1e6)) > prev.relStart,
      );
      all.push({ latency, attempts: cur.attempts, wakes: cur.trace?.wakes ?? null, paused });
      if (cur.trace) {
        wakes.push(cur.trace.wakes);
        if (cur.trace.subscribeMs > 0) subscribe.push(cur.trace.subscribeMs);
        if (cur.trace.acquireTrips > 0) acquireTrips.push(cur.trace.acquireTrips);
        if ((prev.trace?.releaseTrips ?? 0) > 0) releaseTrips.push(prev.trace!.releaseTrips!);
        if (cur.trace.acquireMutexMs > 0) mutexAcquire.push(cur.trace.acquireMutexMs);
        if ((prev.trace?.releaseMutexMs ?? 0) > 0) mutexRelease.push(prev.trace!.releaseMutexMs!);
        if (cur.trace.lastWake !== null) {
          wakeLag.push(msOf(cur.trace.lastWake - prev.relStart));
          afterWake.push(msOf(cur.granted - cur.trace.lastWake));
        }
      }
      if (cur.worker === prev.worker) self += 1;
      else cross.push(latency);
      release.push(msOf(prev.relEnd - prev.relStart));
      afterRelease.push(msOf(cur.granted - prev.relEnd));
      if (cur.attempts !== null) attempts.push(cur.attempts);
      perWorker[cur.worker]! += 1;
    }
  }
  const latencies = all.map((h) => h.latency);
  const p99 = percentile(latencies, 99);
  const slow = all.filter((h) => h.latency >= p99 && h.attempts !== null);
  const mean = (values: number[]) =>
    values.length === 0 ? null : round(values.reduce((a, b) => a + b, 0) / values.length, 2);
  const ms = (value: number) => (Number.isNaN(value) ? null : round(value, 3));
  return {
    handoffs: all.length,
    p50Ms: ms(percentile(latencies, 50)),
    p99Ms: ms(p99),
    maxMs: ms(Math.max(...latencies)),
    meanMs: mean(latencies),
    selfHandoffs: self,
    selfShare: all.length === 0 ? null : round(self / all.length, 3),
    crossP50Ms: ms(percentile(cross, 50)),
    crossP99Ms: ms(percentile(cross, 99)),
    grantsPerWorker: perWorker,
    overlaps,
    // Where a hand-off's time goes: the holder's release call, then release reply -> next grant.
    releaseP50Ms: ms(percentile(release, 50)),
    releaseP99Ms: ms(percentile(release, 99)),
    afterReleaseP50Ms: ms(percentile(afterRelease, 50)),
    afterReleaseP99Ms: ms(percentile(afterRelease, 99)),
    attemptsMean: mean(attempts),
    attemptsMax: attempts.length === 0 ? null : Math.max(...attempts),
    attemptsMeanSlowest1pc: mean(slow.map((h) => h.attempts!)),
    // Garbage collection in the workers during the measured hand-offs: pauses per 1000 hand-offs,
    // their median length, and the share of hand-offs (all, and the slowest 1%) that a pause of the
    // releasing or the next holding process overlaps.
    gcPausesPer1000: all.length === 0 ? null : round((1000 * pauses.length) / all.length, 1),
    gcPauseP50Ms: pauses.length === 0 ? null : ms(percentile(pauses, 50)),
    gcPausedShare: all.length === 0 ? null : round(all.filter((h) => h.paused).length / all.length, 3),
    gcPausedShareSlowest1pc: (() => {
      const slowest = all.filter((h) => h.latency >= p99);
      return slowest.length === 0 ? null : round(slowest.filter((h) => h.paused).length / slowest.length, 3);
    })(),
    // agent-lock only (null otherwise): store notifications per waiting acquire, the watchWaiter()
    // set-up of each waiting acquire, previous release start -> last wake-up before the
    // grant, and that wake-up -> grant.
    wakesMean: mean(wakes),
    wakesMeanSlowest1pc: mean(slow.filter((h) => h.wakes !== null).map((h) => h.wakes!)),
    subscribeP50Ms: subscribe.length === 0 ? null : ms(percentile(subscribe, 50)),
    subscribeP99Ms: subscribe.length === 0 ? null : ms(percentile(subscribe, 99)),
    wakeLagP50Ms: wakeLag.length === 0 ? null : ms(percentile(wakeLag, 50)),
    wakeLagP99Ms: wakeLag.length === 0 ? null : ms(percentile(wakeLag, 99)),
    afterWakeP50Ms: afterWake.length === 0 ? null : ms(percentile(afterWake, 50)),
    afterWakeP99Ms: afterWake.length === 0 ? null : ms(percentile(afterWake, 99)),
    // Commits per acquire and per release (Redis: commit-script round trips; file: log appends).
    acquireTripsMean: mean(acquireTrips),
    releaseTripsMean: mean(releaseTrips),
    // CPU the four workers (and the redis-server, for Redis contenders) used per hand-off: on a
    // small shared machine a contender that burns CPU while waiting slows its own hand-offs.
    workerCpuMsPerHandoff: round(
      rounds.reduce((n, r) => n + r.cpuMs, 0) /
        Math.max(
          1,
          rounds.reduce((n, r) => n + r.loopGrants, 0),
        ),
      3,
    ),
    // The server's figure is over the whole round (start-up included), in 10 ms ticks.
    serverCpuMsPerHandoff: rounds.every((r) => r.serverCpuMs === null)
      ? null
      : round(
          rounds.reduce((n, r) => n + (r.serverCpuMs ?? 0), 0) /
            Math.max(
              1,
              rounds.reduce((n, r) => n + r.loopGrants, 0),
            ),
          3,
        ),
    // File store: time waiting for its internal mutex, per acquire and per release (p99).
    acquireMutexP99Ms: mutexAcquire.length === 0 ? null : ms(percentile(mutexAcquire, 99)),
    releaseMutexP99Ms: mutexRelease.length === 0 ? null : ms(percentile(mutexRelease, 99)),
    acquireMutexMeanMs: mean(mutexAcquire),
    releaseMutexMeanMs: mean(mutexRelease),
    timedOutRounds: rounds.filter((r) => r.timedOut).length,
  };
}

/** The figures of a window of the rounds (the warm one, or whole rounds). */
export const windowOf = (stats: HandoffStats) => ({
  handoffs: stats.handoffs,
  p50Ms: stats.p50Ms,
  p99Ms: stats.p99Ms,
  maxMs: stats.maxMs,
  selfShare: stats.selfShare,
  overlaps: stats.overlaps,
});
export type HandoffWindow = ReturnType<typeof windowOf>;
