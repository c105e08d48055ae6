import { describeAskContract } from './asks-contract.js';
import { fileStore } from './stores.js';

describeAskContract('file', fileStore);
