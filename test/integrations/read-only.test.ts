import { describe, expect, it } from 'vitest';
import { surelyWritesNothing } from '../../src/integrations/read-only.js';

describe('commands that surely write nothing (no trespass stamp before them)', () => {
  it.each([
    'ls -la',
    'git status 2>&1',
    'git log --oneline -5 | head -3',
    "grep -rn 'TODO' src | wc -l",
    'cat package.json > /dev/null',
    'cd src && ls',
    'pwd; echo done',
    'alock list',
  ])('%j writes nothing', (command) => {
    expect(surelyWritesNothing(command, '/home/me')).toBe(true);
  });

  it.each([
    'echo x > a.ts', // a redirection into a file
    'ls > "$out"', // into a file nobody can name
    'npm test', // runs scripts
    'git checkout main', // rewrites the tree
    'git -C sub status', // options first: not read further
    'sort -o out.txt in.txt',
    'uniq in.txt out.txt',
    'ls | xargs rm',
    'cat <<EOF > gen.ts\nx\nEOF',
    'for f in *.ts; do cat "$f"; done', // the light reader leaves it to the grammar
    '$CMD status',
    'python3 -c "print(1)"',
  ])('%j may write', (command) => {
    expect(surelyWritesNothing(command, '/home/me')).toBe(false);
  });
});
