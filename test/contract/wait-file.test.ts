import { fileStore } from './stores.js';
import { describeWaitContract } from './wait-contract.js';

describeWaitContract('file', fileStore);
