/**
 * `alock explain A B`: whether two scopes conflict and why, with a path both match (a witness) or
 * the reason none can. It reads the tree to place the scopes (like every command) and opens no
 * store: nothing is locked, created or changed.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { AgentLockError } from '../../core/errors.js';
import { OVERLAP_STATE_LIMIT } from '../../core/glob-overlap.js';
import { explainOverlap, type OverlapExplanation, parseScope, type Scope } from '../../core/scope.js';
import { findTree, fsProbe } from '../../host/tree.js';
import type { Answer } from '../../answers/answer.js';
import type { CliContext } from '../../answers/cli-context.js';
import { exitCodeFor } from '../../answers/contract.js';
import { paint, quoteArg } from '../../answers/render.js';
import { defineCommand } from '../command.js';

function explainScopes(cli: CliContext, first: string, second: string): Answer {
  const dir = path.resolve(cli.io.cwd, cli.globals().dir ?? '.');
  if (!isDirectory(dir)) {
    throw new AgentLockError('E_USAGE', `--dir ${cli.globals().dir} is not an existing folder`, {
      hint: 'pass a folder inside the tree',
    });
  }
  const ctx = { cwd: dir, root: findTree(dir).root, probe: fsProbe };
  const a = parseScope(first, ctx);
  const b = parseScope(second, ctx);
  const found = explainOverlap(a, b);
  const status = found.conflict ? 'conflict' : 'disjoint';
  const pair = `${quoteArg(a.pattern)} and ${quoteArg(b.pattern)}`;
  const word = paint(cli.style, found.conflict ? 'red' : 'green', found.conflict ? 'CONFLICT' : 'DISJOINT');
  const text = [`${word} ${pair}`, `  ${why(found, a, b)}`];
  // Only a conflict can be an over-refusal: a conservative reading that finds no common path is exact.
  if (!found.exact && found.conflict && found.reason !== 'too_complex') {
    text.push(
      '  (a construct here, such as an escape or a brace range, is judged conservatively: may over-refuse)',
    );
  }
  if (found.conflict && a.kind === 'path')
    text.push('  (two shared locks never conflict; an exclusive one does)');
  return {
    command: 'explain',
    status,
    exitCode: exitCodeFor('explain', status),
    locks: [],
    conflicts: [],
    message: `${status}: ${a.pattern} and ${b.pattern}`,
    text,
    extra: {
      explain: {
        scopes: [view(a), view(b)],
        conflict: found.conflict,
        reason: found.reason,
        witness: found.witness,
        exact: found.exact,
      },
    },
  };
}

const view = (scope: Scope) => ({
  scope: scope.pattern,
  kind: scope.kind,
  ...(scope.kind === 'path' ? { glob: scope.glob, fixed: scope.fixed.join('/') } : {}),
});

/** One line for a person: the witness, or why no path can match both. */
function why(found: OverlapExplanation, a: Scope, b: Scope): string {
  const fixed = (s: Scope) =>
    s.kind === 'path' && s.fixed.length > 0 ? `${s.fixed.join('/')}/` : '(the top)';
  switch (found.reason) {
    case 'same_resource':
      return `both name the resource ${a.pattern}`;
    case 'other_resource':
      return 'two different resources never conflict';
    case 'resource_and_path':
      return 'a resource never conflicts with a path scope';
    case 'same_path':
      return `the same scope${found.witness ? `: both match ${found.witness}` : ''}`;
    case 'other_path':
      return 'two different paths';
    case 'glob_matches_path':
      return `both match ${found.witness}`;
    case 'glob_misses_path': {
      const [glob, plain] = a.kind === 'path' && a.glob ? [a, b] : [b, a];
      return `${glob.pattern} does not match the path ${plain.pattern}`;
    }
    case 'fixed_parts_disjoint':
      return `every path of one starts with ${fixed(a)}, of the other with ${fixed(b)}: they part ways`;
    case 'endings_differ':
      return 'they end differently (the literal text after the last wildcard): no path can match both';
    case 'common_path':
      return found.witness ? `both match ${found.witness}` : 'some path matches both';
    case 'no_common_path':
      return 'no path can match both (checked character by character, with every wildcard)';
    case 'too_complex':
      return `too complex to decide within ${OVERLAP_STATE_LIMIT} states: counted as a conflict, the safe side`;
  }
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

export const explainCommand = defineCommand({
  name: 'explain',
  args: '<scope-a> <scope-b>',
  summary: 'whether two scopes conflict and why: a path both match, or why none can',
  flags: [],
  run: async (cli, a, b) => explainScopes(cli, a, b),
});
