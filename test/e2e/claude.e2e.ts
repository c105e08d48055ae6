/** Claude Code in its real binary: the harness's own cases (its setup is in ./claude.ts). */
import { claudeDef } from './claude.js';
import { harnessSuite } from './suite.js';

harnessSuite(claudeDef);
