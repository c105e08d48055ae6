/**
 * The user documentation in docs/: the generated reference matches the contract table it is made
 * from, the hand-written JSON page names every field the program prints, and no link leaves the
 * repository (a user of the package has nothing beside it).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { contractMarkdown } from '../../src/cli/contract-docs.js';
import { contractDocument } from '../../src/cli/contract.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(repo, file), 'utf8');
const pages = ['README.md', ...readdirSync(path.join(repo, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith('.md'),
);

describe('docs/', () => {
  it('docs/cli.md is what `npm run docs` writes from the contract (re-run it after changing a command)', () => {
    expect(read('docs/cli.md')).toBe(contractMarkdown());
  });

  it('the generated reference names every command the contract has', () => {
    const doc = contractDocument('') as { commands: { name: string }[] };
    const text = read('docs/cli.md');
    for (const { name } of doc.commands) expect(text).toContain(`### ${name}\n`);
  });

  it('docs/json.md explains every envelope field and every lock field', () => {
    const doc = contractDocument('') as { json_envelope: string[]; lock_fields: string[] };
    const text = read('docs/json.md');
    const missing = [...doc.json_envelope, ...doc.lock_fields].filter((f) => !text.includes(`\`${f}\``));
    expect(missing).toEqual([]);
  });

  it('links only to files inside the repository, and each one exists', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target] of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:|#)/.test(target!)) continue;
        const file = path.resolve(repo, path.dirname(page), target!.split('#')[0]!);
        if (!file.startsWith(repo) || !existsSync(file)) broken.push(`${page}: ${target}`);
      }
    }
    expect(pages.length).toBeGreaterThan(3);
    expect(broken).toEqual([]);
  });
});
