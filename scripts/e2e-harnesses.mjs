// The harness versions the end-to-end suite pins, and where each is installed. Shared by
// scripts/e2e-install.mjs and test/e2e so both name the same folders.
import os from 'node:os';
import path from 'node:path';

/** @typedef {{id: string, name: string, pkg: string, version: string, bin: string}} Harness */

/** @type {Harness[]} */
export const HARNESSES = [
  { id: 'claude', name: 'Claude Code', pkg: '@anthropic-ai/claude-code', version: '2.1.332', bin: 'claude' },
  { id: 'codex', name: 'Codex', pkg: '@openai/codex', version: '0.171.0', bin: 'codex' },
  { id: 'gemini', name: 'Gemini CLI', pkg: '@google/gemini-cli', version: '0.61.0', bin: 'gemini' },
  { id: 'copilot', name: 'Copilot CLI', pkg: '@github/copilot', version: '1.0.102', bin: 'copilot' },
  { id: 'opencode', name: 'OpenCode', pkg: 'opencode-ai', version: '1.18.33', bin: 'opencode' },
  { id: 'cline', name: 'Cline CLI', pkg: 'cline', version: '3.0.65', bin: 'cline' },
];

export function cacheRoot() {
  return process.env.AGENT_LOCK_E2E_CACHE || path.join(os.homedir(), '.cache', 'agent-lock-e2e');
}

/** @param {Harness} h */
export function installDir(h) {
  return path.join(cacheRoot(), `${h.pkg.replace('/', '+')}@${h.version}`);
}

/** @param {Harness} h */
export function binaryPath(h) {
  return path.join(installDir(h), 'node_modules', '.bin', h.bin);
}
