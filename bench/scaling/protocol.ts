// What section (k)'s parent (bench/scaling/pool.ts) and its forked workers (bench/scaling-worker.ts)
// say to each other over IPC, and the configuration each worker is started with.

/** The throughput contenders: each worker's own lock on one of them. */
export type ContenderKey =
  | 'redisResource'
  | 'fileResource'
  | 'semaphore'
  | 'contract'
  | 'redisPath'
  | 'filePath';
/** A store folder and Redis prefix of its own for each agent-lock contender and the messages part. */
export type StoreKey = Exclude<ContenderKey, 'semaphore' | 'contract'> | 'messages';

/** BENCH_SCALING_CONFIG, JSON. `redisUrl` null: the file-store contenders only. */
export interface ScalingConfig {
  index: number;
  redisUrl: string | null;
  tree: string;
  stores: Record<StoreKey, string>;
  prefixes: Record<StoreKey, string>;
  leaseMs: number;
  /** The contract bound's record size (bench/scaling/contract.ts); null without Redis. */
  contractRecordBytes: number | null;
  env: NodeJS.ProcessEnv;
}

/** Parent -> worker. */
export type Command =
  /** Open the contender's handle (once), loop for `ms` untimed, answer 'warm'; then wait for 'go'. */
  | { type: 'warm'; contender: ContenderKey; ms: number }
  /** Loop for `seconds`, answer 'result'. */
  | { type: 'go'; seconds: number }
  /** Close every handle, open one on the messages store, take `leases` leases, answer 'held'. */
  | { type: 'hold'; leases: number }
  /** Acquire+release other resources of its own for `seconds`, answer 'churned'. */
  | { type: 'churn'; seconds: number }
  /** Answer 'counted' with the pub/sub messages received since the last 'count'. */
  | { type: 'count' }
  /** Release the leases, close everything, answer 'closed' and exit. */
  | { type: 'close' };

/** Worker -> parent. */
export type Reply =
  | { type: 'started'; index: number }
  | { type: 'warm'; index: number }
  /**
   * The pairs done, the window's length (ms), each pair's time (ms) and the worker's CPU time
   * (process.cpuUsage(), user + system, µs) over the window.
   */
  | { type: 'result'; index: number; ops: number; ms: number; samples: number[]; cpuUs: number }
  | { type: 'held'; index: number }
  | { type: 'churned'; index: number; pairs: number }
  | { type: 'counted'; index: number; messages: number }
  | { type: 'closed'; index: number }
  | { type: 'error'; index: number; message: string };

export type ReplyType = Exclude<Reply['type'], 'error'>;
export type ReplyOf<T extends ReplyType> = Extract<Reply, { type: T }>;

/** Worker `index`'s agent id and its own @resource; the parent sizes the contract bound's record on them. */
export const workerAgentId = (index: number) => `scaling-${index}`;
export const workerResource = (index: number) => `@w${index}`;
