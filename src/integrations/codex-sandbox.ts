/**
 * The Codex sandbox setting `alock hooks install --for codex` adds beside the hook (see below).
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { CliContext } from '../answers/answer.js';
import { makeDirs } from '../host/make-dirs.js';
import { findTree, storeDirFor } from '../host/tree.js';
import { lstatSafe, malformed, writeAtomically } from './settings-file.js';

/**
 * Codex's default `workspace-write` sandbox keeps `.git` read-only, and the file store lives in
 * `.git/agent-locks`: every `alock acquire` from a Codex shell would fail with EROFS. The store is
 * named in the project's `.codex/config.toml` as a writable root (Codex reads a relative one from
 * the folder of that file, so a store inside the tree is written as a portable `../...`); the rest
 * of `.git` stays read-only. The folder must exist: Codex's sandbox cannot bind a missing root and
 * then runs no shell command at all, so it is made here.
 */
const CODEX_TABLE = '[sandbox_workspace_write]';

function codexStoreRoot(cli: CliContext, root: string): { store: string; entry: string } {
  const store = storeDirFor(findTree(root), cli.io.env);
  const codexDir = path.join(root, '.codex');
  const relative = path.relative(codexDir, store);
  const inside = !path.relative(root, store).startsWith('..') && !path.isAbsolute(path.relative(root, store));
  return { store, entry: inside ? relative.split(path.sep).join('/') : store };
}

export function codexSandbox(cli: CliContext, root: string, install: boolean, write: boolean): string | null {
  const file = path.join(root, '.codex', 'config.toml');
  const { store, entry } = codexStoreRoot(cli, root);
  const quoted = JSON.stringify(entry);
  const ourBody = `# agent-lock: the lock store stays writable in Codex's workspace-write sandbox (.git is read-only there).\n${CODEX_TABLE}\nwritable_roots = [${quoted}]\n`;
  let text: string | null = null;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (!install) {
    if (text === null || !text.includes(quoted)) return null;
    if (write) {
      if (text === ourBody) rmSync(file);
      else {
        const next = text.replace(
          new RegExp(`${escapeRegExp(quoted)}\\s*,\\s*|,?\\s*${escapeRegExp(quoted)}`),
          '',
        );
        writeAtomically(file, next, (lstatSafe(file)?.mode ?? 0o644) & 0o777);
      }
    }
    return `UNINSTALLED codex sandbox writable root ${entry} in ${file}`;
  }
  if (write) makeDirs(store);
  if (text?.includes(quoted)) return null;
  let next: string;
  if (text === null || text.trim() === '') next = ourBody;
  else {
    const lines = text.split('\n');
    const header = lines.findIndex((l) => l.trim() === CODEX_TABLE);
    if (header === -1) {
      if (/sandbox_workspace_write/.test(text)) {
        throw malformed(file, 'sandbox_workspace_write is set in a form alock does not edit', 'Codex');
      }
      next = `${text.endsWith('\n') ? text : `${text}\n`}\n${ourBody}`;
    } else {
      let end = lines.findIndex((l, i) => i > header && /^\s*\[/.test(l));
      if (end === -1) end = lines.length;
      const at = lines.findIndex((l, i) => i > header && i < end && /^\s*writable_roots\s*=/.test(l));
      if (at === -1) lines.splice(header + 1, 0, `writable_roots = [${quoted}]`);
      else {
        const one = /^(\s*writable_roots\s*=\s*\[)(.*)\]\s*$/.exec(lines[at] ?? '');
        if (!one) throw malformed(file, 'its writable_roots spans several lines', 'Codex');
        const rest = (one[2] ?? '').trim();
        lines[at] = `${one[1]}${rest === '' ? quoted : `${rest.replace(/,\s*$/, '')}, ${quoted}`}]`;
      }
      next = lines.join('\n');
    }
  }
  if (write) writeAtomically(file, next, (lstatSafe(file)?.mode ?? 0o644) & 0o777);
  return `WRITABLE ${store} in Codex's workspace-write sandbox (${file})`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
