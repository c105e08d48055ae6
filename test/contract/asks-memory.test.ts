import { describeAskContract } from './asks-contract.js';
import { memoryStore } from './stores.js';

describeAskContract('memory', memoryStore);
