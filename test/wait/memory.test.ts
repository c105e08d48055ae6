import { MemoryStore } from '../../src/backends/memory/memory-store.js';
import { describeWaitContract } from './wait-contract.js';

describeWaitContract('memory', async () => {
  const store = new MemoryStore();
  return { connect: () => store.connect(), cleanup: async () => {} };
});
