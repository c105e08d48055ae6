import { afterAll, beforeAll } from 'vitest';
import { redisStore } from '../contract/stores.js';
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
  describeWaitContract('redis', () => redisStore(server.url));
});
