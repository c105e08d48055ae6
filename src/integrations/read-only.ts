/**
 * Shell commands that surely write no file: every part a program that writes nothing whatever its
 * arguments (`ls`, `grep`, `git status`), with no redirection into a file. The trespass check
 * stamps the held files before any other shell call, which costs a call the store's read of every
 * lock held in the tree (about 20 ms with 100 locks held); a command like these has nothing for it
 * to catch.
 */
import path from 'node:path';
import { type LightCommand, readLight } from './shell-reader.js';

/** Programs that write no file of the tree, whatever their arguments. */
const READS_ONLY = new Set([
  'ls',
  'cat',
  'head',
  'tail',
  'wc',
  'grep',
  'egrep',
  'fgrep',
  'rg',
  'ag',
  'pwd',
  'echo',
  'printf',
  'which',
  'type',
  'true',
  'false',
  'test',
  '[',
  'stat',
  'file',
  'du',
  'df',
  'date',
  'whoami',
  'id',
  'uname',
  'hostname',
  'sleep',
  'diff',
  'cmp',

  'realpath',
  'dirname',
  'basename',
  'nproc',
  'uptime',
  'ps',
  'jq',

  'column',
  'cut',
  'tr',

  'comm',
  'nl',
  'od',

  'hexdump',
  'md5sum',
  'sha1sum',
  'sha256sum',
  'readlink',
  'printenv',
  'cd',
  'alock',
  'agent-lock',
]);

/** git subcommands that write no file of the work tree (some write under .git). */
const GIT_READS_ONLY = new Set([
  'status',
  'log',
  'diff',
  'show',
  'rev-parse',
  'ls-files',
  'blame',
  'describe',
  'shortlog',
  'grep',
  'fetch',
  'remote',
  'branch',
  'tag',
  'reflog',
  'ls-tree',
  'cat-file',
  'rev-list',
  'merge-base',
  'show-ref',
  'config',
  'whatchanged',
]);

/** Redirections that write nothing: reads, a copied descriptor, or the null device. */
function harmless(op: string, target: string | null): boolean {
  if (op === '<' || op === '<<' || op === '<&') return true;
  if (target === null) return false;
  if (op === '>&' && /^(\d+-?|-)$/.test(target)) return true;
  return target === '/dev/null' || target === '/dev/stdout' || target === '/dev/stderr';
}

function readsOnly(command: LightCommand): boolean {
  if (!command.redirects.every((r) => harmless(r.op, r.target))) return false;
  const [name, ...args] = command.words;
  if (name === undefined) return true;
  if (name === null) return false;
  const base = path.basename(name);
  if (base === 'git') {
    const sub = args[0];
    // `git -C dir ...`, `git -c k=v ...`: options first are read no further.
    return typeof sub === 'string' && GIT_READS_ONLY.has(sub);
  }
  if (base === 'alock' || base === 'agent-lock') return true;
  return READS_ONLY.has(base);
}

/** Whether `command` surely writes no file (false whenever the light reader cannot tell). */
export function surelyWritesNothing(command: string, home: string | undefined): boolean {
  const list = readLight(command, home);
  return list?.every((pipeline) => pipeline.every(readsOnly)) ?? false;
}
