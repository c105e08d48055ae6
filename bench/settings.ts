// The bench's run sizes (BENCH_QUICK=1 is a fast smoke run) and the targets of every section.
export const quick = process.env.BENCH_QUICK === '1';

export interface Settings {
  spawnRuns: number;
  spawnWarmup: number;
  opsMax: number;
  opsSeconds: number;
  opsWarmup: number;
  rounds: number;
  latIters: number;
  latWarmup: number;
  redisWarmup: number;
  redisRounds: number;
  redisRoundSeconds: number;
  handoffRounds: number;
  handoffsPerRound: number;
  handoffWarmup: number;
  handoffWarmSkip: number;
  handoffRoundSeconds: number;
  /** (k): interleaved rounds of every (N, contender) point, and each point's seconds per round. */
  scalingRounds: number;
  scalingPointSeconds: number;
  /** (k): untimed loop of each worker before every point, in ms. */
  scalingWarmupMs: number;
  scalingOneClientSeconds: number;
  scalingChurnSeconds: number;
  /**
   * (l): calls per agent in the 8-agent loop (the 1-agent loop makes 8 times as many, so that both
   * p99s are taken over as many calls).
   */
  claimLoopCalls: number;
}

export const SETTINGS: Settings = quick
  ? {
      spawnRuns: 5,
      spawnWarmup: 1,
      opsMax: 300,
      opsSeconds: 0.5,
      opsWarmup: 50,
      rounds: 2,
      latIters: 60,
      latWarmup: 10,
      redisWarmup: 200,
      redisRounds: 3,
      redisRoundSeconds: 0.15,
      handoffRounds: 1,
      handoffsPerRound: 200,
      handoffWarmup: 20,
      handoffWarmSkip: 300,
      handoffRoundSeconds: 20,
      scalingRounds: 2,
      scalingPointSeconds: 0.5,
      scalingWarmupMs: 150,
      scalingOneClientSeconds: 0.5,
      scalingChurnSeconds: 1,
      claimLoopCalls: 4,
    }
  : {
      spawnRuns: 30,
      spawnWarmup: 3,
      opsMax: 3000,
      opsSeconds: 3,
      opsWarmup: 300,
      rounds: 3,
      latIters: 500,
      latWarmup: 50,
      redisWarmup: 2000,
      redisRounds: 7,
      redisRoundSeconds: 0.5,
      handoffRounds: 4,
      handoffsPerRound: 500,
      handoffWarmup: 50,
      handoffWarmSkip: 2500,
      handoffRoundSeconds: 60,
      scalingRounds: 2,
      scalingPointSeconds: 1.5,
      scalingWarmupMs: 400,
      scalingOneClientSeconds: 1,
      scalingChurnSeconds: 3,
      claimLoopCalls: 15,
    };
if (SETTINGS.handoffWarmSkip < SETTINGS.handoffWarmup + SETTINGS.handoffsPerRound) {
  throw new Error('bench settings: the warm window of (f) must start after the measured one ends');
}

export const TARGETS = {
  coldStartMax: 1.5,
  hookCallMax: 1.3,
  // (h) over the shell corpus (issue 28): per-command ratios against node -e 0.
  shellCorpus: { freeMedianMax: 1.2, freeP95Max: 1.5, heldMedianMax: 1.3, heldP95Max: 1.7 },
  rateMin: 2,
  latencyMax: 3,
  redisLatencyMax: 3,
  handoffRedisP99MaxMs: 2,
  handoffFileP99MaxMs: 5,
  // (f) against its floor ring (issue 19): whole-round p99, and the workers' CPU per hand-off.
  handoffWholeP99VsFloorMax: 1.25,
  handoffCpuVsFloorMax: 1.5,
  // (k), stores that scale with the number of agents (issue 19). (d) has no targets: its bare
  // SET NX PX bound does less than agent-lock's contract, so (k) judges one client against a
  // contract bound instead.
  scaling: {
    redisVsSemaphoreMin: 0.8,
    redisPathVsResourceAt8Min: 0.5,
    fileAt8VsAt1Min: 0.5,
    fileVsSemaphoreAt8Min: 1.0,
    oneClientVsContractMin: 0.9,
    messagesPerCommitMax: 2,
  },
  // (l), claims on edit (issue 29): hook calls against node -e 0, and 8 agents' p99 against 1's.
  claims: {
    claimFileMax: 1.35,
    claimRedisMax: 1.8,
    furtherFileMax: 1.25,
    furtherWritesMax: 0,
    agentsP99Max: 2,
  },
};

/** The lease of the Redis contenders, and of the hand-off workers. */
export const LEASE_MS = 30000;

// bench/bundle.mjs defines it: the bundles run from node_modules/.cache, not from bench/.
declare const __BENCH_REPO__: string;
/** The checkout under test: its bin/alock.js and dist/ are what the bench measures. */
export const repo: string = __BENCH_REPO__;
