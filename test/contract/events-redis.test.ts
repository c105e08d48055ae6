import { describeRedis, redisForSuite } from '../backends/redis/server.js';
import { describeEventContract } from './events-contract.js';
import { redisStore } from './stores.js';

describeRedis('redis events', () => {
  const server = redisForSuite();
  describeEventContract('redis', () => redisStore(server().url));
});
