/**
 * Fresh, empty stores for the suites every backend runs (the backend contract, waiting and
 * leases): each `connect()` is a separate handle on the same store, as another process would open.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Backend } from '../../src/backends/backend.js';
import { FileStore } from '../../src/backends/file/file-store.js';
import { ensureStoreDir } from '../../src/backends/file/safe-fs.js';
import { MemoryStore } from '../../src/backends/memory/memory-store.js';
import { RedisStore } from '../../src/backends/redis/redis-store.js';
import { hostName, processAlive, startStamp } from '../../src/host/process.js';

export interface TestStore {
  /** A new handle on the same store, as another process would open it. */
  connect(): Backend;
  cleanup(): Promise<void>;
}

export async function memoryStore(): Promise<TestStore> {
  const store = new MemoryStore();
  return { connect: () => store.connect(), cleanup: async () => {} };
}

/** A store folder of its own; every handle has its own cache, append handle and mutex owner file. */
export async function fileStore(): Promise<TestStore> {
  const parent = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-test-store-')));
  const dir = path.join(parent, 'store');
  ensureStoreDir(dir);
  const self = { host: hostName(), pid: process.pid, started: startStamp(process.pid) };
  const handles: FileStore[] = [];
  return {
    connect() {
      const handle = new FileStore({
        dir,
        self,
        mutexTimeoutMs: 15_000,
        processAlive,
        now: Date.now,
        fresh: true,
      });
      handles.push(handle);
      return handle;
    },
    async cleanup() {
      for (const handle of handles) await handle.close();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** A store of its own on a running server: a fresh key prefix. */
export async function redisStore(url: string): Promise<TestStore> {
  const prefix = `test-${randomBytes(6).toString('hex')}`;
  const handles: Backend[] = [];
  return {
    connect() {
      const handle = new RedisStore({
        url,
        prefix,
        timeoutMs: 5000,
        busyTimeoutMs: 15_000,
        staleMs: 120 * 60_000,
      });
      handles.push(handle);
      return handle;
    },
    async cleanup() {
      for (const handle of handles) await handle.close();
    },
  };
}
