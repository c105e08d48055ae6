import { MemoryStore } from '../../src/backends/memory/memory-store.js';
import { describeBackendContract } from './contract.js';

describeBackendContract('memory', async () => {
  const store = new MemoryStore();
  return {
    connect: () => store.connect(),
    cleanup: async () => {},
  };
});
