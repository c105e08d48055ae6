import { describeClaimContract } from './claims-contract.js';
import { fileStore } from './stores.js';

describeClaimContract('file', fileStore, () => ({ AGENT_LOCK_BACKEND: 'file' }));
