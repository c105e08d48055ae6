import { fileStore } from '../contract/stores.js';
import { describeWaitContract } from './wait-contract.js';

describeWaitContract('file', fileStore);
