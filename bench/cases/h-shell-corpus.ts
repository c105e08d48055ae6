// (h)'s corpus: shell commands as coding agents run them, for the hook's cost on every shell call.
// Gathered from what the harnesses tell their models and what sessions show them doing: Claude
// Code's Bash tool prompt (`git status`, `git diff`, `git log`, commits and `gh pr create` with a
// quoted here-document, `cd /foo/bar && pytest tests`), exported Claude Code sessions (scripts run
// with quoted paths, background builds), AGENTS.md and CLAUDE.md files (`npm run build`, `npm
// test`, `npx tsc --noEmit`, `npx eslint src/`, `nix-shell --run 'npm test'`), and the build
// scripts agents are pointed at (`npm run build 2>&1 | tee build.log`, `npm run build > /dev/null
// 2>&1`). None writes a file under held/, where (h) holds its 100 locks.
const COMMIT = `git commit -m "$(cat <<'EOF'
Fix the retry loop so a closed socket ends it

The loop kept polling after the server went away.
EOF
)"`;
const PR = `gh pr create --title "Fix retry loop" --body "$(cat <<'EOF'
## Summary
- stop polling after the socket closes

## Test plan
- [x] npm test
EOF
)"`;
const TEST_FILE = `cat > /tmp/test_api.py <<'EOF'
import requests

def test_health():
    assert requests.get("http://localhost:8000/health").status_code == 200
EOF`;
const CONFIG = `cat <<'EOF' > src/config/defaults.json
{ "retries": 3, "timeoutMs": 5000 }
EOF`;

export const SHELL_CORPUS: readonly string[] = [
  // git, as the commit and PR instructions ask
  'git status',
  'git status 2>&1',
  'git status --short',
  'git diff',
  'git diff --stat',
  'git diff HEAD~1 -- src/server.ts',
  'git diff --cached',
  'git log --oneline -10',
  'git log -5 --format="%h %s"',
  'git log --oneline main..HEAD',
  'git branch --show-current',
  'git branch -a',
  'git remote -v',
  'git show --stat HEAD',
  'git show HEAD:package.json | head -20',
  'git add src/server.ts test/server.test.ts',
  'git add -A && git status',
  'git add src/ && git commit -m "Add retry limit"',
  COMMIT,
  PR,
  'git push -u origin HEAD',
  'git fetch origin && git status -sb',
  'git rev-parse --abbrev-ref HEAD',
  'git stash list',
  'git blame -L 10,30 src/server.ts',
  'git ls-files | wc -l',
  'git grep -n "retry" -- src',
  'git log --oneline -20 | cat',
  'git diff main...HEAD --stat',
  'git checkout -b fix/retry-loop',
  'gh pr view --json title,body',
  'gh pr checks',
  'gh issue view 42',
  'gh api repos/:owner/:repo/pulls/12/comments',
  // npm, pnpm, yarn, node
  'npm test',
  'npm run build',
  'npm run build 2>&1 | tail -5',
  'npm run build 2>&1 | tail -20',
  'npm run lint',
  'npm run lint -- --fix',
  'npm run typecheck',
  'npm test -- --run src/server.test.ts',
  'npm test 2>&1 | tail -30',
  'npm install',
  'npm install --save-dev vitest',
  'npm ci',
  'npm ls react',
  'npm run dev > /tmp/dev.log 2>&1 &',
  'npm run build > /dev/null 2>&1',
  'npm run build 2>&1 | tee build.log',
  'npm run test:unit -- --reporter=verbose 2>&1 | grep -E "FAIL|PASS"',
  'npx tsc --noEmit',
  'npx tsc --noEmit 2>&1 | head -50',
  'npx eslint src/',
  'npx eslint src/ --ext .ts,.tsx',
  'npx prettier --check .',
  'npx vitest run test/server.test.ts',
  'npx jest --testPathPattern=auth',
  'npx playwright test --project=chromium',
  'pnpm install',
  'pnpm test',
  'pnpm run build 2>&1 | tail -10',
  'pnpm -r build',
  'yarn install --frozen-lockfile',
  'yarn test --watchAll=false',
  'node --version',
  'node dist/cli.js --help',
  'node scripts/migrate.js --dry-run',
  "nix-shell --run 'npm test'",
  // cd first
  'cd web && npm test',
  'cd web && npm run build 2>&1 | tail -5',
  'cd packages/api && npm test -- --run',
  'cd /tmp && ls -la',
  'cd frontend && npx tsc --noEmit',
  'cd backend && python -m pytest -x -q',
  'cd backend && go test ./...',
  'cd "web app" && npm install',
  'cd src && grep -rn "TODO" .',
  'cd .. && ls',
  // python
  'python -m pytest',
  'python -m pytest -x -q tests/test_api.py',
  'python3 -m pytest tests/ -k "retry" -v',
  'pytest tests -q 2>&1 | tail -15',
  'python scripts/extract_single.py "books/Atlas of the Heart.epub"',
  'python3 -m venv .venv && source .venv/bin/activate && pip install -r requirements.txt',
  'pip install -e ".[dev]"',
  'uv run pytest',
  'uv sync',
  'ruff check .',
  'ruff format --check src',
  'mypy src/',
  'python3 -c "import sys; print(sys.version)"',
  `python3 -c 'import json; print(json.load(open("package.json"))["version"])'`,
  // go, rust, make, docker
  'go build ./...',
  'go test ./... 2>&1 | tail -20',
  'go vet ./...',
  'go mod tidy',
  'cargo build',
  'cargo test 2>&1 | tail -30',
  'cargo clippy -- -D warnings',
  'cargo fmt --check',
  'make',
  'make test',
  'make -j4 2>&1 | tail -20',
  'docker compose up -d',
  'docker compose logs --tail=50 api',
  'docker ps',
  'docker build -t app . 2>&1 | tail -5',
  // reading and searching
  'ls',
  'ls -la',
  'ls -la src/',
  'ls src/components | head',
  'tree -L 2 -I node_modules',
  'cat package.json',
  'head -50 src/server.ts',
  'tail -100 logs/app.log',
  'wc -l src/*.ts',
  'grep -rn "useEffect" src/ | head -20',
  'grep -r "TODO" --include="*.ts" src | wc -l',
  'rg -n "retry" src',
  'rg --files | head -50',
  'rg -l "export default" src/components',
  'find . -name "*.test.ts" -not -path "./node_modules/*"',
  'find src -type f -name "*.tsx" | xargs wc -l | sort -n | tail',
  'du -sh node_modules',
  'jq ".scripts" package.json',
  'cat tsconfig.json | jq .compilerOptions',
  'env | grep -i node',
  'which node npm',
  'echo $PATH',
  'pwd',
  'date',
  'sleep 2 && curl -s localhost:3000/health',
  'curl -s http://localhost:8080/api/users | jq .',
  'curl -sSf https://registry.npmjs.org/vitest | jq -r .version',
  'lsof -i :3000',
  'ps aux | grep node | head',
  'kill %1',
  // making and moving files
  'mkdir -p src/utils',
  'mkdir -p tests/fixtures && touch tests/fixtures/.gitkeep',
  'touch src/utils/index.ts',
  'cp .env.example .env',
  'mv src/old.ts src/legacy/old.ts',
  'rm -rf dist',
  'rm -rf node_modules/.cache',
  'rm src/unused.ts',
  'chmod +x scripts/deploy.sh',
  'ln -s ../shared/config.ts src/config.ts',
  'echo "node_modules/" >> .gitignore',
  'echo "export {}" > src/empty.ts',
  "printf '%s\\n' a b c > /tmp/list.txt",
  TEST_FILE,
  CONFIG,
  "sed -i 's/retries: 2/retries: 3/' src/config.ts",
  "sed -n '10,40p' src/server.ts",
  "awk -F, '{print $1}' data.csv | sort | uniq -c",
  'tar czf /tmp/backup.tgz src',
  'unzip -l release.zip',
  // loops and conditions
  'for f in src/*.ts; do echo "$f: $(wc -l < "$f")"; done',
  'if [ -f .env ]; then echo yes; else echo no; fi',
  'test -d node_modules || npm install',
  '[ -f package-lock.json ] && npm ci || npm install',
  'while ! curl -s localhost:3000 > /dev/null; do sleep 1; done',
  'npm run build && npm test && git status',
  'npm test; echo "exit: $?"',
  'timeout 60 npm test',
  'time npm run build',
  'FORCE_COLOR=0 npm test 2>&1 | tail -40',
  'NODE_ENV=production npm run build',
  'export NODE_OPTIONS=--max-old-space-size=4096 && npm run build',
];
