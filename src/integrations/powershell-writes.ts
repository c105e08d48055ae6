/**
 * The files a PowerShell command visibly writes (Claude Code's `PowerShell` tool, Copilot CLI's
 * `powershell`). Not a PowerShell parser: it reads statements split at `;`, `|`, `&&`, `||` and
 * line ends, and in each the writing cmdlets (and their usual aliases) with literal paths, and the
 * redirections `>`, `>>`, `2>`, `*>` into a literal file, following `Set-Location`/`cd` with a
 * literal folder. Anything it cannot read as literal text (a variable, a sub-expression, a script
 * block, a wildcard path, `Invoke-Expression`, a nested `pwsh -Command`) makes the command
 * `unparsed`, which the hook decides like an unparsed shell command (AGENT_LOCK_HOOK_SHELL_UNPARSED).
 * Native programs run from PowerShell (`sed -i`, `git checkout`) are not read here.
 */
import path from 'node:path';
import type { CliContext } from '../answers/answer.js';
import { allow, checkFiles, type HookAgent, type HookDecision } from './hook-check.js';
import { unparsedRefusal, unparsedSetting, unreadNote } from './hook-shell.js';

export type PowerShellWrites =
  | { readonly kind: 'none' }
  | { readonly kind: 'unparsed'; readonly why: string }
  | { readonly kind: 'files'; readonly files: readonly string[] };

/** A word as PowerShell would see it: its text when literal, else null. */
interface Word {
  readonly text: string | null;
  /** A bare `-Name` parameter (never a quoted one). */
  readonly param: boolean;
  /** A redirection operator, with its target attached when written as `>file`. */
  readonly redirect?: { readonly target: Word | null };
}

class Unparsed extends Error {}

/** Cmdlets (lower case, aliases included) that write files, and what their positional words are. */
const WRITERS: Record<string, readonly ('path' | 'dest' | 'newname' | 'other')[]> = {};
function writer(names: string[], positions: ('path' | 'dest' | 'newname' | 'other')[]): void {
  for (const name of names) WRITERS[name] = positions;
}
writer(['set-content', 'sc', 'add-content', 'ac'], ['path', 'other']);
writer(['clear-content', 'clc'], ['path']);
writer(['out-file'], ['path', 'other']);
writer(['tee-object', 'tee'], ['path']);
writer(['new-item', 'ni', 'mkdir', 'md'], ['path']);
writer(['remove-item', 'ri', 'rm', 'rmdir', 'del', 'erase', 'rd'], ['path']);
writer(['copy-item', 'copy', 'cp', 'cpi'], ['other', 'dest']);
writer(['move-item', 'move', 'mv', 'mi'], ['path', 'dest']);
writer(['rename-item', 'ren', 'rni'], ['path', 'newname']);
writer(['export-csv', 'epcsv', 'export-clixml'], ['path']);

/** Parameters whose value names a file the cmdlet writes. */
const PATH_PARAMS = new Set(['path', 'literalpath', 'lp', 'pspath', 'filepath', 'destination']);
/** Parameters that take no value. */
const SWITCHES = new Set([
  'force',
  'recurse',
  'append',
  'noclobber',
  'nonewline',
  'passthru',
  'whatif',
  'confirm',
  'notypeinformation',
  'asbytestream',
  'container',
]);
const CD = new Set(['set-location', 'sl', 'cd', 'chdir', 'push-location', 'pushd']);
const OPAQUE = new Set(['invoke-expression', 'iex', 'powershell', 'pwsh', 'start-process', 'saps', 'start']);

/** Splits the command into statements of words; throws Unparsed on what it cannot read. */
function statements(command: string): Word[][] {
  const out: Word[][] = [];
  let words: Word[] = [];
  let i = 0;
  const end = () => {
    if (words.length > 0) out.push(words);
    words = [];
  };
  const readWord = (): Word => {
    let text = '';
    let literal = true;
    while (i < command.length) {
      const c = command[i]!;
      if (/[\s;|&<>(){}]/.test(c)) break;
      if (c === "'") {
        const close = command.indexOf("'", i + 1);
        if (close < 0) throw new Unparsed('an unterminated string');
        text += command.slice(i + 1, close);
        i = close + 1;
        continue;
      }
      if (c === '"') {
        const close = command.indexOf('"', i + 1);
        if (close < 0) throw new Unparsed('an unterminated string');
        const inner = command.slice(i + 1, close);
        if (/[$`]/.test(inner)) literal = false;
        text += inner;
        i = close + 1;
        continue;
      }
      if (c === '$' || c === '`' || c === '@' || c === ',') literal = false;
      text += c;
      i += 1;
    }
    // `> $null` discards the output: the one variable read, as it writes no file.
    if (!literal && /^\$null$/i.test(text)) return { text: '$null', param: false };
    return { text: literal ? text : null, param: false };
  };
  while (i < command.length) {
    const c = command[i]!;
    if (c === '\n' || c === ';') {
      end();
      i += 1;
    } else if (/\s/.test(c)) {
      i += 1;
    } else if (c === '|' || c === '&') {
      // `|`, `||`, `&&` end a statement; `& cmd` calls whatever cmd names.
      if (c === '&' && command[i + 1] !== '&') {
        if (words.length === 0) {
          i += 1;
          continue;
        }
        throw new Unparsed('a background job');
      }
      end();
      i += command[i + 1] === c ? 2 : 1;
    } else if (c === '(' || c === ')' || c === '{' || c === '}') {
      throw new Unparsed('a sub-expression or script block');
    } else if (c === '<') {
      throw new Unparsed('an input redirection');
    } else if (c === '>' || (/[0-9*]/.test(c) && command[i + 1] === '>')) {
      // `>`, `>>`, `2>`, `*>>`; `2>&1` merges streams and names no file.
      i += c === '>' ? 1 : 2;
      if (command[i] === '>') i += 1;
      if (command[i] === '&') {
        i += 2;
        continue;
      }
      while (i < command.length && /[ \t]/.test(command[i]!)) i += 1;
      const target = i < command.length && !/[\s;|&]/.test(command[i]!) ? readWord() : null;
      words.push({ text: null, param: false, redirect: { target } });
    } else if (c === '-' && words.length > 0 && /[A-Za-z]/.test(command[i + 1] ?? '')) {
      const match = /^-([A-Za-z][A-Za-z0-9]*)(:?)/.exec(command.slice(i))!;
      i += match[0].length;
      words.push({ text: match[1]!.toLowerCase(), param: true });
      if (match[2] === ':') words.push(readWord());
    } else {
      words.push(readWord());
    }
  }
  end();
  return out;
}

function literal(word: Word | undefined, what: string): string {
  if (word === undefined || word.text === null) throw new Unparsed(`${what} that is not literal text`);
  if (/[*?[\]]/.test(word.text)) throw new Unparsed(`${what} with a wildcard`);
  if (word.text.startsWith('~')) throw new Unparsed(`${what} under ~`);
  return word.text;
}

/** Drops a provider prefix (`FileSystem::`), which names the same file. */
function bare(p: string): string {
  return p.replace(/^(Microsoft\.PowerShell\.Core\\)?FileSystem::/i, '');
}

export function powerShellWrites(command: string, base: string): PowerShellWrites {
  try {
    const files: string[] = [];
    let cwd = base;
    const at = (p: string) => path.resolve(cwd, bare(p));
    for (const words of statements(command)) {
      // Redirections anywhere in the statement.
      for (const word of words) {
        if (!word.redirect) continue;
        const target = word.redirect.target;
        if (target?.text?.toLowerCase() === '$null') continue;
        files.push(at(literal(target ?? undefined, 'a redirection target')));
      }
      const plain = words.filter((w) => !w.redirect);
      const head = plain[0];
      if (head === undefined) continue;
      if (head.text === null) throw new Unparsed('a command name that is not literal text');
      const name = head.text.toLowerCase();
      if (OPAQUE.has(name)) throw new Unparsed(`${head.text}, which runs text as a command`);
      if (CD.has(name)) {
        const target = plain.slice(1).find((w) => !w.param);
        cwd = at(literal(target, 'a folder'));
        continue;
      }
      const positions = WRITERS[name];
      if (positions === undefined) continue;
      const named = new Map<string, string>();
      const positional: Word[] = [];
      for (let k = 1; k < plain.length; k += 1) {
        const word = plain[k]!;
        if (!word.param) {
          positional.push(word);
          continue;
        }
        if (SWITCHES.has(word.text!)) continue;
        const value = plain[k + 1];
        k += 1;
        if (PATH_PARAMS.has(word.text!) || word.text === 'newname' || word.text === 'name') {
          named.set(word.text!, literal(value, `-${word.text}`));
        }
      }
      let source: string | null = null;
      for (const [param, value] of named) {
        if (PATH_PARAMS.has(param)) {
          if (param !== 'destination' && (name.startsWith('cop') || name === 'cp' || name === 'cpi'))
            continue;
          files.push(at(value));
          if (param !== 'destination') source = at(value);
        }
      }
      positional.forEach((word, index) => {
        const role = positions[index] ?? 'other';
        if (role === 'other') return;
        if (role === 'newname') {
          if (source !== null) files.push(path.join(path.dirname(source), literal(word, 'a new name')));
          return;
        }
        const value = at(literal(word, 'a path'));
        files.push(value);
        if (role === 'path') source = value;
      });
      const newName = named.get('newname');
      if (newName !== undefined && source !== null) files.push(path.join(path.dirname(source), newName));
      // New-Item -Name x [-Path dir]: the item is x in that folder (the current one by default).
      const itemName = named.get('name');
      if (itemName !== undefined && (name === 'new-item' || name === 'ni')) {
        files.push(path.join(named.has('path') ? at(named.get('path')!) : cwd, itemName));
      }
    }
    return files.length === 0 ? { kind: 'none' } : { kind: 'files', files: [...new Set(files)] };
  } catch (error) {
    if (error instanceof Unparsed) return { kind: 'unparsed', why: error.message };
    throw error;
  }
}

/**
 * A PowerShell command: refused when it visibly writes a file another agent holds; one this reader
 * cannot follow is decided as an unparsed shell command is (AGENT_LOCK_HOOK_SHELL_UNPARSED).
 */
export async function checkPowerShell(
  cli: CliContext,
  command: string,
  base: string,
  agent: () => HookAgent,
  tool?: string,
): Promise<HookDecision> {
  const writes = powerShellWrites(command, base);
  if (writes.kind === 'none') return allow('allowed: the command writes no file');
  // A write claims what it writes, as an edit does (with `tool`: the harness's PowerShell tool).
  if (writes.kind === 'files') return checkFiles(cli, writes.files, agent(), base, tool);
  const what = `read this PowerShell command (${writes.why})`;
  return (
    unparsedRefusal(
      unparsedSetting(cli.io.env),
      what,
      'Use literal paths, or edit files with the edit tool.',
    ) ?? unreadNote(what)
  );
}
