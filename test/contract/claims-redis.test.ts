import { randomBytes } from 'node:crypto';
import { describeRedis, redisForSuite } from '../backends/redis/server.js';
import { describeClaimContract } from './claims-contract.js';
import { redisStore } from './stores.js';

describeRedis('redis claims', () => {
  const server = redisForSuite();
  describeClaimContract(
    'redis',
    () => redisStore(server().url),
    () => ({
      AGENT_LOCK_BACKEND: 'redis',
      AGENT_LOCK_REDIS_URL: server().url,
      AGENT_LOCK_REDIS_PREFIX: `claims-${randomBytes(6).toString('hex')}`,
    }),
  );
});
