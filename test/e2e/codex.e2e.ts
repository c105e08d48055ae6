/** Codex in its real binary: the harness's own cases (its setup is in ./codex.ts). */
import { codexDef } from './codex.js';
import { harnessSuite } from './suite.js';

harnessSuite(codexDef);
