import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { RedisStore } from '../../src/backends/redis/redis-store.js';
import { describeRedis, type RedisServer, startRedis } from '../redis/server.js';
import { describeWaitContract } from './wait-contract.js';

describeRedis('redis waiting', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  // Each case gets a store of its own: a fresh key prefix on the one server.
  describeWaitContract('redis', async () => {
    const prefix = `wait-${randomBytes(6).toString('hex')}`;
    const handles: Backend[] = [];
    return {
      connect() {
        const handle = new RedisStore({
          url: server.url,
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
  });
});
