/**
 * The user documentation in docs/: the generated reference matches the contract table it is made
 * from, the hand-written JSON page names every field the program prints, no link leaves the
 * repository (a user of the package has nothing beside it), and the README stays a short tour.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { contractDocument } from '../../src/cli/contract.js';
import { contractMarkdown } from '../../src/cli/contract-docs.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(repo, file), 'utf8');
const pages = [
  'README.md',
  ...readdirSync(path.join(repo, 'docs')).map((f) => `docs/${f}`),
  ...readdirSync(path.join(repo, 'bench')).map((f) => `bench/${f}`),
].filter((f) => f.endsWith('.md'));

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as dashes. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const [, heading] of markdown.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} +(.+)$/gm)) {
    const slug = heading!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    found.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return found;
}

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

  it('links only to files inside the repository, and each one exists, down to its heading', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target] of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target!)) continue;
        const [where, anchor] = target!.split('#') as [string, string | undefined];
        const file = path.resolve(repo, path.dirname(page), where === '' ? path.basename(page) : where);
        if (!file.startsWith(repo) || !existsSync(file)) broken.push(`${page}: ${target}`);
        else if (anchor !== undefined && !anchors(readFileSync(file, 'utf8')).has(anchor)) {
          broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    expect(pages).toContain('docs/agents.md');
    expect(pages).toContain('bench/README.md');
    expect(broken).toEqual([]);
  });

  it('no source, test or page cites a design document the repository does not hold', () => {
    // Spelled in two parts so that this file does not match itself.
    const citation = new RegExp(`${'DES'}IGN( section)? \\d`);
    const files = ['src', 'test', 'docs', 'bench', 'scripts', 'bin', 'assets'].flatMap((dir) =>
      readdirSync(path.join(repo, dir), { recursive: true, encoding: 'utf8' })
        .map((f) => path.join(dir, f))
        .filter((f) => /\.(ts|mts|js|mjs|cjs|md|sh)$/.test(f)),
    );
    expect(files.length).toBeGreaterThan(100);
    expect(files.filter((f) => citation.test(read(f)))).toEqual([]);
  });

  it('the README is a tour: at most 300 lines, the reference linked from it', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    for (const page of [
      'docs/cli.md',
      'docs/agents.md',
      'docs/library.md',
      'docs/stores.md',
      'docs/concepts.md',
    ]) {
      expect(readme).toContain(`](${page}`);
    }
    // Dated benchmark notes belong in bench/, not in the tour.
    expect(readme).not.toMatch(/\b20\d\d-\d\d-\d\d\b/);
  });
});
