import { describeRedis, redisForSuite } from '../backends/redis/server.js';
import { describeBackendContract } from './contract.js';
import { redisStore } from './stores.js';

describeRedis('redis backend', () => {
  const server = redisForSuite();
  // Each case gets a store of its own: a fresh key prefix on the one server.
  describeBackendContract('redis', () => redisStore(server().url));
});
