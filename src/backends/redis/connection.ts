/**
 * The Redis store's connection: ioredis loaded on first use, one client per handle (a plain server,
 * Sentinel or Cluster, as the URL says), with its scripts defined, and every failure of the server
 * or the connection turned into one clear E_BACKEND_UNAVAILABLE.
 */

import { createRequire } from 'node:module';
import { sha1 } from '@noble/hashes/legacy';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import { AgentLockError } from '../../core/errors.js';
import type { RedisTarget } from '../../core/redis-url.js';
import { COMMIT_LUA } from './commit-script.js';
import { REPAIR_LUA, WATCH_LUA } from './upkeep-scripts.js';

/** The commands of ioredis this store uses, so that the library is loaded only when needed. */
export interface Client {
  /** COMMIT_LUA on KEYS then ARGV (numberOfKeys 4): see commitScript. */
  agentLockCommit(...argv: string[]): Promise<string[]>;
  agentLockWatch(key: string, ms: string, field?: string): Promise<unknown>;
  agentLockRepair(...args: string[]): Promise<number>;
  hgetall(key: string): Promise<Record<string, string>>;
  select(db: number): Promise<unknown>;
  type(key: string): Promise<string>;
  rename(key: string, to: string): Promise<unknown>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
  xrevrange(
    key: string,
    end: string,
    start: string,
    count: 'COUNT',
    n: number,
  ): Promise<[string, string[]][]>;
  connect(): Promise<void>;
  disconnect(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  duplicate(): Client;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
  call(command: string, ...args: string[]): Promise<unknown>;
  /** ioredis flattens an array argument into the command's arguments. */
  eval(lua: string, numberOfKeys: string, args: readonly string[]): Promise<unknown>;
  evalsha(sha: string, numberOfKeys: string, args: readonly string[]): Promise<unknown>;
}

/**
 * COMMIT_LUA by EVALSHA, its text sent (EVAL) only when the server answers NOSCRIPT (a new,
 * restarted or flushed server, another node): a short-lived CLI or hook process on a server that
 * knows the script never uploads its ~19 KB. What ioredis's defineCommand does, without its
 * per-call wrapper (the arguments spread, unshifted and copied again, a reject wrapped and a catch
 * chained on every call), which cost ~2-8% of the CPU of an acquire/release pair (in-process A/B on
 * a real server). Retrying on NOSCRIPT is safe: the server ran nothing.
 */
/**
 * ioredis's defineCommand hashes its script at once, which loads node:crypto (about 6 ms of a hook
 * call's CPU); a wait's watch and a repair are rare, so each is defined on its first call, which
 * then replaces this stand-in on the client.
 */
function defineOnFirstUse(
  client: Client,
  name: 'agentLockWatch' | 'agentLockRepair',
  definition: { numberOfKeys: number; lua: string },
): void {
  const standIn = (...args: string[]): Promise<never> => {
    client.defineCommand(name, definition);
    return (client[name] as (...a: string[]) => Promise<never>)(...args);
  };
  client[name] = standIn as never;
}

declare const __COMMIT_LUA_SHA1__: string;

/**
 * COMMIT_LUA's SHA-1, as the server's script cache names it. The bundles have it from their build
 * (scripts/build.mjs): hashing ~19 KB in JavaScript on every hook call on Redis cost ~5 ms, and
 * node:crypto costs more to load. Unbundled (the tests), it is hashed here, once a process.
 */
let commitSha1: string | undefined =
  typeof __COMMIT_LUA_SHA1__ === 'string' ? __COMMIT_LUA_SHA1__ : undefined;
export function commitLuaSha1(): string {
  commitSha1 ??= bytesToHex(sha1(utf8ToBytes(COMMIT_LUA)));
  return commitSha1;
}

function commitScript(client: Client): (...argv: string[]) => Promise<string[]> {
  const sha = commitLuaSha1();
  const load = (argv: readonly string[]) => client.eval(COMMIT_LUA, '4', argv) as Promise<string[]>;
  const noScript = (argv: readonly string[]) => (error: unknown) => {
    if (error instanceof Error && error.message.includes('NOSCRIPT')) return load(argv);
    throw error;
  };
  return (...argv) => (client.evalsha(sha, '4', argv) as Promise<string[]>).catch(noScript(argv));
}

declare const __BUNDLED_IOREDIS__: boolean;

/**
 * ioredis is CommonJS. The CLI's bundle carries it inside (a dynamic import esbuild resolves). The
 * library keeps it in node_modules and loads it with require: an ESM import of a CommonJS module
 * makes Node lex its source for named exports, which costs ~17 ms here and, worse, a ~60-300 ms
 * optimising compile of the lexer on a background thread that competes with the first commits.
 */
type Ioredis = Pick<typeof import('ioredis'), 'Redis' | 'Cluster'>;
function loadIoredis(): Promise<Ioredis> {
  if (typeof __BUNDLED_IOREDIS__ === 'boolean' && __BUNDLED_IOREDIS__) return import('ioredis');
  return Promise.resolve(createRequire(import.meta.url)('ioredis') as Ioredis);
}

export class Connection {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  /** The last error a connection reported on its own (the cause behind a command that failed). */
  lastError: Error | null = null;

  constructor(
    private readonly target: RedisTarget,
    private readonly timeoutMs: number,
    /** Where the server is, for messages: its URL without the password. */
    private readonly location: string,
    /** The error for damage the server found (a key of another type), named by the store. */
    private readonly damaged: (what: string, cause: unknown) => Error,
  ) {}

  /** The client once connected, or null. */
  get current(): Client | null {
    return this.client;
  }

  disconnect(): void {
    this.client?.disconnect();
    this.client = null;
  }

  get(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().then(
      (client) => {
        this.client = client;
        return client;
      },
      (error: unknown) => {
        this.connecting = null;
        throw error;
      },
    );
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const { Redis, Cluster } = await loadIoredis();
    const { target, timeoutMs } = this;
    const common = {
      username: target.username,
      password: target.password,
      tls: target.tls ? {} : undefined,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      maxRetriesPerRequest: 1,
      // The ready check costs a round trip per connection; a server still loading its data
      // answers LOADING to the first command instead, which is reported like any other error.
      enableReadyCheck: false,
      lazyConnect: true,
      // A refused connection would otherwise keep the process alive for 2 s after disconnect().
      disconnectTimeout: 20,
      connectionName: 'agent-lock',
      // CLIENT SETINFO is unknown before Redis 7.2: skip it rather than pay an error per connection.
      disableClientInfo: true,
      // At least 100 ms: COMMIT_LUA takes a merge only within 50 ms of its decision, so a merge that
      // ioredis sends again after reconnecting is never applied twice (MERGE in commit-script.ts).
      retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
    };
    let client: Client;
    if (target.cluster) {
      client = new Cluster(
        target.hosts.map((h) => ({ host: h.host, port: h.port })),
        {
          lazyConnect: true,
          enableReadyCheck: true,
          slotsRefreshTimeout: timeoutMs,
          clusterRetryStrategy: (attempt: number) => (attempt > 3 ? null : attempt * 100),
          redisOptions: common,
        },
      ) as unknown as Client;
    } else if (target.sentinel !== null) {
      client = new Redis({
        ...common,
        sentinels: target.hosts.map((h) => ({ host: h.host, port: h.port })),
        name: target.sentinel,
        db: target.db,
      }) as unknown as Client;
    } else {
      const [endpoint] = target.hosts;
      client = new Redis({
        ...common,
        host: endpoint!.host,
        port: endpoint!.port,
        db: target.db,
      }) as unknown as Client;
    }
    client.on('error', (error) => {
      this.lastError = error;
    });
    client.agentLockCommit = commitScript(client);
    defineOnFirstUse(client, 'agentLockWatch', { numberOfKeys: 1, lua: WATCH_LUA });
    defineOnFirstUse(client, 'agentLockRepair', { numberOfKeys: 3, lua: REPAIR_LUA });
    try {
      await withDeadline(client.connect(), timeoutMs);
    } catch (error) {
      client.disconnect();
      throw this.unavailable(error);
    }
    // ioredis selects the URL's database on connect but carries on in database 0 when the server
    // has no such database: the store would live where nobody looks. Selected once more, awaited.
    if (!target.cluster && target.db > 0) {
      try {
        await withDeadline(client.select(target.db), timeoutMs);
      } catch (error) {
        client.disconnect();
        if (error instanceof Error && /out of range|invalid DB index/i.test(error.message)) {
          throw new AgentLockError(
            'E_BACKEND_UNAVAILABLE',
            `the redis server at ${this.location} has no database ${target.db}`,
            { cause: error, hint: 'use a database number the server has: 0 to 15 by default' },
          );
        }
        throw this.unavailable(error);
      }
    }
    return client;
  }

  /**
   * Runs a command; any failure of the server or the connection is E_BACKEND_UNAVAILABLE, but a key
   * of another type, or data a script cannot read, is damage: E_STORE_UNREADABLE.
   */
  async call<T>(command: () => Promise<T>): Promise<T> {
    try {
      // ioredis bounds each command (commandTimeout, also while queued offline); a cluster that
      // is not ready yet queues commands of its own, without that bound.
      return await (this.target.cluster ? withDeadline(command(), this.timeoutMs + 100) : command());
    } catch (error) {
      // The scripts check the store's data themselves before writing; the one damage left for the
      // server to find is a key of another type (our keys are a hash and lists).
      const message = error instanceof Error ? error.message : String(error);
      if (/^WRONGTYPE|\bWRONGTYPE Operation/.test(message)) {
        throw this.damaged('cannot be read (one of its keys is of another type)', error);
      }
      throw this.unavailable(error);
    }
  }

  unavailable(error: unknown): AgentLockError {
    const cause = (error instanceof Error ? error : new Error(String(error))) as NodeJS.ErrnoException;
    const last = this.lastError as NodeJS.ErrnoException | null;
    const code = cause.code ?? last?.code;
    const seconds = `${Math.round(this.timeoutMs / 100) / 10} s`;
    let reason: string;
    if (cause instanceof DeadlineError || /timed? ?out/i.test(cause.message))
      reason = `no answer within ${seconds}`;
    else if (code === 'ECONNREFUSED') reason = 'connection refused';
    else if (/NOAUTH|unauthenticated/i.test(`${cause.message} ${last?.message ?? ''}`))
      reason = 'the server wants a password (redis://:PASSWORD@host)';
    else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') reason = 'host not found';
    else if (code) reason = `${code}${last?.message ? ` (${firstLine(last.message)})` : ''}`;
    else reason = firstLine(last && /closed/i.test(cause.message) ? last.message : cause.message);
    return new AgentLockError(
      'E_BACKEND_UNAVAILABLE',
      `the redis server at ${this.location} is unavailable: ${reason}`,
      {
        cause: error,
        hint: 'check that it runs and AGENT_LOCK_REDIS_URL (or REDIS_URL) points at it; if the store is gone for good, alock init --backend file --force goes back to a file store',
      },
    );
  }
}

export class DeadlineError extends Error {}

export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError('timed out')), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]!.slice(0, 200);
}
