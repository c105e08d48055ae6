import { memoryStore } from './stores.js';
import { describeWaitContract } from './wait-contract.js';

describeWaitContract('memory', memoryStore);
