import { describeBackendContract } from './contract.js';
import { memoryStore } from './stores.js';

describeBackendContract('memory', memoryStore);
