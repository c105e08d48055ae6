// Section (k)'s forked workers (bench/scaling-worker.ts): started once for the whole section, so
// that its figures hold no process start-up, and asked in turn for each step.
import { type ChildProcess, fork } from 'node:child_process';
import type { Command, Reply, ReplyOf, ReplyType, ScalingConfig } from './protocol.js';

/** How long the section waits for any worker's answer before it gives up. */
const REPLY_MS = 60_000;

export interface PoolWorker {
  index: number;
  child: ChildProcess;
  waiting: Map<ReplyType, Waiter>;
  closed: boolean;
}

interface Waiter {
  resolve(reply: Reply): void;
  reject(error: Error): void;
}

export interface Pool {
  workers: PoolWorker[];
  /** Sends `message` to each of `some` and resolves with their `reply` messages. */
  request<T extends ReplyType>(some: PoolWorker[], message: Command, reply: T): Promise<ReplyOf<T>[]>;
  close(): Promise<void>;
}

/**
 * Forks `count` workers of `script`. Any worker's error or early exit rejects what is pending, and
 * so does a step no worker answers within REPLY_MS: a broken or stuck worker ends the section, not
 * the bench.
 */
export async function startPool(
  script: string,
  count: number,
  config: Omit<ScalingConfig, 'index'>,
  env: NodeJS.ProcessEnv,
): Promise<Pool> {
  const workers: PoolWorker[] = [];
  const pending = new Set<Waiter>();
  let failure: Error | null = null;
  const failAll = (error: Error) => {
    failure ??= error;
    for (const p of pending) p.reject(failure);
    pending.clear();
  };
  for (let i = 0; i < count; i++) {
    const child = fork(script, [], {
      env: { ...env, BENCH_SCALING_CONFIG: JSON.stringify({ ...config, index: i }) },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => {
      if (stderr.length < 4000) stderr += chunk;
    });
    const w: PoolWorker = { index: i, child, waiting: new Map(), closed: false };
    child.on('message', (message: Reply) => {
      if (message.type === 'error') {
        failAll(new Error(`worker ${i}: ${message.message.split('\n').slice(0, 3).join(' | ')}`));
        return;
      }
      const waiter = w.waiting.get(message.type);
      if (waiter) {
        w.waiting.delete(message.type);
        pending.delete(waiter);
        waiter.resolve(message);
      }
    });
    child.on('exit', (code, signal) => {
      if (!w.closed)
        failAll(new Error(`worker ${i} exited (${code ?? signal}): ${stderr.trim().slice(-500)}`));
    });
    workers.push(w);
  }
  const expectReply = <T extends ReplyType>(w: PoolWorker, type: T) =>
    new Promise<ReplyOf<T>>((resolve, reject) => {
      if (failure) return reject(failure);
      const waiter: Waiter = { resolve: resolve as (reply: Reply) => void, reject };
      w.waiting.set(type, waiter);
      pending.add(waiter);
    });
  /** No step takes this long: a worker that does not answer is stuck, and so is the section. */
  const bounded = async <T>(promise: Promise<T>, reply: string): Promise<T> => {
    const timer = setTimeout(() => failAll(new Error(`no '${reply}' within ${REPLY_MS / 1000} s`)), REPLY_MS);
    try {
      return await promise;
    } finally {
      clearTimeout(timer);
    }
  };
  const request = async <T extends ReplyType>(some: PoolWorker[], message: Command, reply: T) => {
    const replies = some.map((w) => expectReply(w, reply));
    for (const w of some) {
      // A worker that was told to close exits on its own once it has answered.
      if (message.type === 'close') w.closed = true;
      w.child.send(message);
    }
    return bounded(Promise.all(replies), reply);
  };
  const close = async () => {
    process.off('exit', close);
    for (const w of workers) {
      w.closed = true;
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    }
  };
  process.once('exit', close);
  try {
    await bounded(Promise.all(workers.map((w) => expectReply(w, 'started'))), 'started');
  } catch (error) {
    await close();
    throw error;
  }
  return { workers, request, close };
}
