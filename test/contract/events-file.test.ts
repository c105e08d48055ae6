import { describeEventContract } from './events-contract.js';
import { fileStore } from './stores.js';

describeEventContract('file', fileStore);
