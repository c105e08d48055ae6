import { redisStore } from './stores.js';
import { describeRedis, redisForSuite } from '../backends/redis/server.js';
import { describeWaitContract } from './wait-contract.js';

describeRedis('redis waiting', () => {
  const server = redisForSuite();
  // Each case gets a store of its own: a fresh key prefix on the one server.
  describeWaitContract('redis', () => redisStore(server().url));
});
