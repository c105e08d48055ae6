/**
 * Whether a harness will run the hook agent-lock installed, where the harness keeps that decision
 * in a file alock can read: Codex (project trust and a trusted hash per hook in
 * `$CODEX_HOME/config.toml`), Gemini CLI (`~/.gemini/trustedFolders.json`), Copilot CLI
 * (`trusted_folders` in `$COPILOT_HOME/config.json`). A hook the harness skips is a hook that is
 * silently off: said as a problem, with what to do. And whether the program an installed hook runs
 * (node and this package's bin, by absolute path) is still there.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Finding, note, ok, problem } from './finding.js';

type Env = Readonly<Record<string, string | undefined>>;

function home(env: Env): string {
  return env.HOME !== undefined && env.HOME !== '' ? env.HOME : os.homedir();
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** `dir` is `root` or one of its parents. */
function covers(dir: string, root: string): boolean {
  const rel = path.relative(path.resolve(dir), root);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The tables of a TOML file whose header is `[<prefix>."<key>"]`, each with its `name = "value"`
 * lines: enough of TOML for the two tables Codex writes (no TOML parser loaded for a doctor line).
 */
function quotedTables(text: string, prefix: string): Map<string, Map<string, string>> {
  const tables = new Map<string, Map<string, string>>();
  let current: Map<string, string> | null = null;
  const header = new RegExp(`^\\[${prefix.replace(/\./g, '\\.')}\\."((?:[^"\\\\]|\\\\.)*)"\\]\\s*$`);
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('[')) {
      const match = header.exec(trimmed);
      current = match ? new Map() : null;
      if (match && current) tables.set(JSON.parse(`"${match[1]}"`) as string, current);
      continue;
    }
    const pair = /^([A-Za-z0-9_]+)\s*=\s*"((?:[^"\\]|\\.)*)"/.exec(trimmed);
    if (current && pair) current.set(pair[1]!, pair[2]!);
  }
  return tables;
}

export function codexTrust(root: string, env: Env): Finding {
  const codexHome = env.CODEX_HOME || path.join(home(env), '.codex');
  const file = path.join(codexHome, 'config.toml');
  const text = readText(file) ?? '';
  const projects = quotedTables(text, 'projects');
  const trusted = [...projects].some(([dir, t]) => t.get('trust_level') === 'trusted' && covers(dir, root));
  const hooksFile = path.join(root, '.codex', 'hooks.json');
  const hookTrusted = [...quotedTables(text, 'hooks.state')].some(
    ([key, t]) => key.startsWith(`${hooksFile}:pre_tool_use:`) && (t.get('trusted_hash') ?? '') !== '',
  );
  const missing = [
    trusted ? null : `the project is not trusted ([projects."${root}"] trust_level = "trusted")`,
    hookTrusted ? null : 'no trust is recorded for its PreToolUse hook ([hooks.state] trusted_hash)',
  ].filter((x): x is string => x !== null);
  if (missing.length === 0) {
    return ok(
      'hooks',
      'hook_codex_trust',
      `codex: the project and its hook are trusted in ${file} (a hook changed since, as by hooks install, must be trusted again in /hooks)`,
    );
  }
  return problem(
    'hooks',
    'hook_codex_untrusted',
    `codex: will not run the agent-lock hook: ${missing.join('; and ')} in ${file}`,
    'start codex here, trust the project when asked, then trust the hook in /hooks',
  );
}

export function geminiTrust(root: string, env: Env): Finding {
  const dir = path.join(home(env), '.gemini');
  const settings = readText(path.join(dir, 'settings.json'));
  try {
    const parsed =
      settings === null
        ? null
        : (JSON.parse(settings) as { security?: { folderTrust?: { enabled?: unknown } } } | null);
    if (parsed?.security?.folderTrust?.enabled === false) {
      return ok('hooks', 'hook_gemini_trust', 'gemini: folder trust is off, so project hooks run');
    }
  } catch {
    // an unreadable settings file says nothing about trust
  }
  const file = path.join(dir, 'trustedFolders.json');
  let rules: Record<string, unknown> = {};
  try {
    rules = JSON.parse(readText(file) ?? '{}') as Record<string, unknown>;
  } catch {
    return problem('hooks', 'hook_gemini_untrusted', `gemini: ${file} is not valid JSON`, 'fix the file');
  }
  // The most specific rule wins: TRUST_FOLDER trusts a folder and below, TRUST_PARENT its parent.
  let best: { depth: number; trusted: boolean } | null = null;
  for (const [p, value] of Object.entries(rules)) {
    const folder = value === 'TRUST_PARENT' ? path.dirname(p) : p;
    if (!covers(folder, root)) continue;
    const depth = path.resolve(folder).length;
    if (best === null || depth >= best.depth) best = { depth, trusted: value !== 'DO_NOT_TRUST' };
  }
  if (best?.trusted) return ok('hooks', 'hook_gemini_trust', `gemini: this folder is trusted in ${file}`);
  return problem(
    'hooks',
    'hook_gemini_untrusted',
    `gemini: this folder is not trusted in ${file}, so Gemini CLI skips its project hooks`,
    'start gemini here and trust the folder when asked (never --skip-trust)',
  );
}

export function copilotTrust(root: string, env: Env): Finding {
  const dir = env.COPILOT_HOME || path.join(home(env), '.copilot');
  const folders: string[] = [];
  for (const name of ['config.json', 'settings.json']) {
    try {
      const value = JSON.parse(readText(path.join(dir, name)) ?? '{}') as Record<string, unknown>;
      for (const key of ['trusted_folders', 'trustedFolders']) {
        const list = value[key];
        if (Array.isArray(list)) folders.push(...list.filter((x): x is string => typeof x === 'string'));
      }
    } catch {
      // not JSON: says nothing about trust
    }
  }
  const file = path.join(dir, 'config.json');
  if (folders.some((f) => covers(f, root))) {
    return ok('hooks', 'hook_copilot_trust', `copilot: this folder is trusted in ${file}`);
  }
  return problem(
    'hooks',
    'hook_copilot_untrusted',
    `copilot: this folder is not in trusted_folders of ${file}, so Copilot CLI skips its repository hooks`,
    'start copilot here and trust the folder when asked',
  );
}

/** The first two words before `hooks <harness>-pre-tool-use` in a hook's text, unquoted. */
function programWords(text: string, harness: string): string[] | null {
  const word = `('(?:[^']|'\\\\'')*'|[^\\s'"\\\\]+)`;
  const match = new RegExp(`${word}\\s+${word}\\s+hooks\\s+${harness}-pre-tool-use`).exec(text);
  if (!match) return null;
  return [match[1]!, match[2]!].map((w) => (w.startsWith("'") ? w.slice(1, -1).replace(/'\\''/g, "'") : w));
}

/**
 * The program an installed hook runs, when it is node and a bin script by absolute path: null when
 * both are there (or the hook is not written that way), else what is gone.
 */
export function goneProgram(text: string, harness: string): string | null {
  const words = programWords(text, harness);
  if (words === null) return null;
  const [node, bin] = words as [string, string];
  if (!path.isAbsolute(node) || !bin.endsWith('alock.js')) return null;
  const gone = [node, bin].filter((p) => !existsSync(p));
  return gone.length === 0 ? null : gone.join(' and ');
}

/** A hook written before absolute paths (`alock hooks ...`): it runs only where alock is on PATH. */
export function bareProgram(text: string, harness: string): boolean {
  return new RegExp(`(^|[\\s"'])(alock|agent-lock)\\s+hooks\\s+${harness}-pre-tool-use`).test(text);
}

export function staleFinding(harness: string, gone: string, install: string): Finding {
  return problem(
    'hooks',
    `hook_${harness}_stale`,
    `${harness}: the hook runs ${gone}, which is gone: every call it checks is refused until it is installed again`,
    install,
  );
}

export function bareFinding(harness: string, install: string, found: boolean): Finding {
  return found
    ? note(
        'hooks',
        `hook_${harness}_path`,
        `${harness}: the hook runs alock from PATH, which the harness may not have`,
        install,
      )
    : problem(
        'hooks',
        `hook_${harness}_unrunnable`,
        `${harness}: the hook runs alock from PATH and there is none: the harness gets exit 127 and lets calls through`,
        install,
      );
}
