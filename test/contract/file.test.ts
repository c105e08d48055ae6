import { describeBackendContract } from './contract.js';
import { fileStore } from './stores.js';

describeBackendContract('file', fileStore);
