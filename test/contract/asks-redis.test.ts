import { describeRedis, redisForSuite } from '../backends/redis/server.js';
import { describeAskContract } from './asks-contract.js';
import { redisStore } from './stores.js';

describeRedis('redis asks', () => {
  const server = redisForSuite();
  describeAskContract('redis', () => redisStore(server().url));
});
