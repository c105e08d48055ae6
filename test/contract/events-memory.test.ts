import { describeEventContract } from './events-contract.js';
import { memoryStore } from './stores.js';

describeEventContract('memory', memoryStore);
