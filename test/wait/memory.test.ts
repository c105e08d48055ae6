import { memoryStore } from '../contract/stores.js';
import { describeWaitContract } from './wait-contract.js';

describeWaitContract('memory', memoryStore);
