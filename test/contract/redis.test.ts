import { afterAll, beforeAll } from 'vitest';
import { describeRedis, type RedisServer, startRedis } from '../redis/server.js';
import { describeBackendContract } from './contract.js';
import { redisStore } from './stores.js';

describeRedis('redis backend', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });
  // Each case gets a store of its own: a fresh key prefix on the one server.
  describeBackendContract('redis', () => redisStore(server.url));
});
