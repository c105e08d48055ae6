/**
 * Two sessions at once, neither having run `alock acquire`: Claude Code with Claude Code, Codex with
 * Codex, and Claude Code with Codex (see ./pairs.ts).
 */
import { claudeDef } from './claude.js';
import { codexDef } from './codex.js';
import { pairSuite } from './pairs.js';

pairSuite(claudeDef, claudeDef, { ask: true });
pairSuite(codexDef, codexDef, { ask: true });
pairSuite(claudeDef, codexDef, { ask: true });
