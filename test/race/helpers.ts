/**
 * Real processes for the race and crash suites: a worker is `node fixtures/lock-worker.mjs` with its
 * own AGENT_ID, holding its locks for as long as it lives, driven by JSON lines on stdin.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const WORKER = fileURLToPath(new URL('./fixtures/lock-worker.mjs', import.meta.url));
export const CLI = path.join(REPO, 'bin', 'alock.js');

/** The workers import the built library: a stale or missing build would test nothing. */
export function requireBuild(): void {
  for (const file of ['dist/index.js', 'dist/cli.js']) {
    if (!existsSync(path.join(REPO, file))) {
      throw new Error(`${file} is missing: run \`npm run build\` before the race suites`);
    }
  }
}

export interface LockBrief {
  id: string;
  scope: string;
  fence: number;
  agent_id: string;
  status: string;
  notes: number;
}

export interface Shaped {
  status: string;
  locks: LockBrief[];
  conflicts: LockBrief[];
}

export type Reply = { ok: true; result: Shaped } | { ok: false; error: { code: string; message: string } };

// biome-ignore lint/suspicious/noExplicitAny: worker events are free-form JSON lines
export type WorkerEvent = Record<string, any>;

/** A scratch tree and store folder, removed by `cleanup`. */
export function scratch(prefix: string): { root: string; tree: string; store: string; cleanup: () => void } {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), `alock-${prefix}-`)));
  const tree = path.join(root, 'tree');
  const store = path.join(root, 'store');
  return { root, tree, store, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export class Worker {
  readonly proc: ChildProcessByStdio<Writable, Readable, Readable>;
  readonly events: WorkerEvent[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  pid = 0;
  private seq = 0;
  private readonly pending = new Map<number, (reply: Reply) => void>();
  private readonly watchers: { test: (event: WorkerEvent) => boolean; resolve: (e: WorkerEvent) => void }[] =
    [];
  private stderr = '';
  private alive = true;

  constructor(
    readonly agentId: string,
    options: { store: string; tree: string; env?: Record<string, string> },
  ) {
    this.proc = spawn(process.execPath, [WORKER], {
      cwd: options.tree,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? os.tmpdir(),
        AGENT_ID: agentId,
        AGENT_LOCK_DIR: options.store,
        AGENT_LOCK_REDIS_PROBE: 'off',
        ...options.env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.proc.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    // A killed worker's stdin may report EPIPE on a late write; the exit is what counts.
    this.proc.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.alive = false;
        resolve({ code, signal });
      });
    });
    createInterface({ input: this.proc.stdout }).on('line', (line) => this.onLine(line));
  }

  private onLine(line: string): void {
    let event: WorkerEvent;
    try {
      event = JSON.parse(line) as WorkerEvent;
    } catch {
      event = { type: 'garbage', line };
    }
    if (event.type === 'ready') this.pid = event.pid as number;
    if (event.type === 'reply') {
      const resolve = this.pending.get(event.seq as number);
      this.pending.delete(event.seq as number);
      resolve?.(event as unknown as Reply);
      return;
    }
    this.events.push(event);
    for (const watcher of [...this.watchers]) {
      if (watcher.test(event)) {
        this.watchers.splice(this.watchers.indexOf(watcher), 1);
        watcher.resolve(event);
      }
    }
  }

  /** Resolves with the first event (already seen or still to come) that passes `test`. */
  waitFor(test: (event: WorkerEvent) => boolean, what = 'an event'): Promise<WorkerEvent> {
    const seen = this.events.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      this.watchers.push({ test, resolve });
      void this.exited.then(({ code, signal }) =>
        reject(
          new Error(
            `${this.agentId} exited (${code ?? signal}) before ${what}: ${this.stderr.slice(-2000) || 'no stderr'}`,
          ),
        ),
      );
    });
  }

  ready(): Promise<WorkerEvent> {
    return this.waitFor((event) => event.type === 'ready', 'ready');
  }

  /** Writes one command now (synchronously queued on the pipe) and returns its answer later. */
  send(command: Record<string, unknown>): Promise<Reply> {
    const seq = ++this.seq;
    const answer = new Promise<Reply>((resolve, reject) => {
      this.pending.set(seq, resolve);
      void this.exited.then(({ code, signal }) => {
        if (this.pending.delete(seq)) {
          reject(new Error(`${this.agentId} exited (${code ?? signal}): ${this.stderr.slice(-2000)}`));
        }
      });
    });
    this.proc.stdin.write(`${JSON.stringify({ ...command, seq })}\n`);
    return answer;
  }

  /** Like send, but a thrown error in the worker fails the test with its code and message. */
  async ask(command: Record<string, unknown>): Promise<Shaped> {
    const reply = await this.send(command);
    if (!reply.ok) {
      throw new Error(
        `${this.agentId} ${String(command.op)} failed: ${reply.error.code} ${reply.error.message}`,
      );
    }
    return reply.result;
  }

  async kill(): Promise<void> {
    if (this.alive) this.proc.kill('SIGKILL');
    await this.exited;
  }

  async stop(): Promise<void> {
    if (!this.alive) return;
    this.proc.stdin.end();
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

export async function startWorkers(
  ids: readonly string[],
  options: { store: string; tree: string; env?: Record<string, string> },
): Promise<Worker[]> {
  const workers = ids.map((id) => new Worker(id, options));
  await Promise.all(workers.map((worker) => worker.ready()));
  return workers;
}

/** One parsed line of locks.log. */
export interface LogLine {
  t: string;
  fence: number;
  put?: { id: string; fence: number; agent_id: string; status: string; notes: unknown[] }[];
  del?: string[];
  locks?: { id: string; fence: number; agent_id: string; status: string; notes: unknown[] }[];
}

/** Every line of the log; throws on a line that is not JSON (a torn or corrupt record). */
export function readLog(store: string): { text: string; lines: LogLine[] } {
  const text = readFileSync(path.join(store, 'locks.log'), 'utf8');
  const raw = text.split('\n');
  if (raw.at(-1) !== '') throw new Error(`locks.log ends with a torn line: ${JSON.stringify(raw.at(-1))}`);
  return { text, lines: raw.slice(0, -1).map((line) => JSON.parse(line) as LogLine) };
}

/** Replays the log as the store would: the live records after the last committed line. */
export function replayLog(store: string): Map<string, NonNullable<LogLine['put']>[number]> {
  const live = new Map<string, NonNullable<LogLine['put']>[number]>();
  for (const line of readLog(store).lines) {
    if (line.t === 'snap') {
      live.clear();
      for (const record of line.locks ?? []) live.set(record.id, record);
      continue;
    }
    for (const id of line.del ?? []) live.delete(id);
    for (const record of line.put ?? []) live.set(record.id, record);
  }
  return live;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A lock record as the Redis store keeps it (the `{prefix}:locks` hash: id -> record JSON). */
export interface StoredRecord {
  id: string;
  scope: string;
  fence: number;
  agent_id: string;
  status: string;
  pid: number;
  host: string;
  expires_at: number | null;
  notes: unknown[];
}

/**
 * Reads a Redis store straight from the server (never through agent-lock): its lock records and
 * its recent commits (`{prefix}:changes`, oldest first, each "version previous id id ...").
 * Records are found by shape, in whichever hash of the prefix holds them (a field that is a lock
 * id, whose value is a record with that id), so that the test does not pin the key layout.
 */
export async function readRedisStore(
  url: string,
  prefix: string,
): Promise<{ locks: Map<string, StoredRecord>; commits: { version: number; ids: string[] }[] }> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await client.scan(cursor, 'MATCH', `{${prefix}}:*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== '0');
    const locks = new Map<string, StoredRecord>();
    for (const key of keys) {
      if ((await client.type(key)) !== 'hash') continue;
      for (const [field, json] of Object.entries(await client.hgetall(key))) {
        if (!field.startsWith('lk_')) continue;
        const record = JSON.parse(json) as StoredRecord;
        if (record.id !== field) throw new Error(`${key} ${field} holds the record of ${record.id}`);
        locks.set(field, record);
      }
    }
    const changes = await client.lrange(`{${prefix}}:changes`, 0, -1);
    const commits = changes.map((entry) => {
      const [version, , ...ids] = entry.split(' ');
      return { version: Number(version), ids };
    });
    return { locks, commits };
  } finally {
    client.disconnect();
  }
}

/** A key prefix no other run (or test) shares. */
export function uniquePrefix(name: string): string {
  return `alock-test/${name}/${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}

/**
 * Churning workers (acquire, note, release for ever) that a test kills at random: a mix of warm
 * handles, a fresh handle per decision, and one every 7 decisions (cold snapshot loads).
 */
export function churnPool(track: (worker: Worker) => Worker, opts: ConstructorParameters<typeof Worker>[1]) {
  const grants: LockBrief[] = [];
  const errors: unknown[] = [];
  let serial = 0;
  return {
    grants,
    errors,
    async start(): Promise<Worker> {
      serial += 1;
      const worker = track(new Worker(`churn-${serial}`, opts));
      await worker.ready();
      await worker.ask({ op: 'churn', freshEvery: serial % 3 === 0 ? 1 : serial % 3 === 1 ? 0 : 7 });
      return worker;
    },
    /** Collects a worker's grants and errors (once it is dead or done). */
    harvest(worker: Worker): void {
      for (const event of worker.events) {
        if (event.type === 'grant') grants.push(...(event.locks as LockBrief[]));
        if (event.type === 'error') errors.push({ agent: worker.agentId, ...event.error });
      }
    },
  };
}
