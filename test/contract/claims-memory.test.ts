import { describeClaimContract } from './claims-contract.js';
import { memoryStore } from './stores.js';

describeClaimContract('memory', memoryStore, null);
