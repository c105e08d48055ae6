/**
 * What the PowerShell reader takes as written (Claude Code's PowerShell tool, Copilot CLI's
 * powershell): literal writes are named, anything it cannot read as literal text is unparsed.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { powerShellWrites } from '../../src/integrations/powershell-writes.js';

const BASE = '/repo';
const at = (...p: string[]) => p.map((x) => path.join(BASE, x));

describe('powerShellWrites', () => {
  it.each([
    ["Set-Content -Path src/a.ts -Value 'x'", at('src/a.ts')],
    ["sc src/a.ts 'x'", at('src/a.ts')],
    ["Add-Content -LiteralPath 'src/a b.ts' -Value x", at('src/a b.ts')],
    ['Get-Date | Out-File -FilePath log.txt -Append', at('log.txt')],
    ["'x' > src/a.ts", at('src/a.ts')],
    ["'x' >> src/a.ts 2>&1", at('src/a.ts')],
    ['Remove-Item src/a.ts -Force', at('src/a.ts')],
    ['del src/a.ts', at('src/a.ts')],
    ['Copy-Item src/a.ts -Destination src/b.ts', at('src/b.ts')],
    ['cp src/a.ts src/b.ts', at('src/b.ts')],
    ['Move-Item src/a.ts src/b.ts', at('src/a.ts', 'src/b.ts')],
    ['Rename-Item src/a.ts b.ts', at('src/a.ts', 'src/b.ts')],
    ['New-Item -Path src -Name c.ts -ItemType File', at('src', 'src/c.ts')],
    ["Set-Location src; 'x' > a.ts", at('src/a.ts')],
    ["cd src && Set-Content a.ts 'x'", at('src/a.ts')],
    ['Get-Content x | Tee-Object -FilePath out.txt', at('out.txt')],
    ['Remove-Item -Path FileSystem::src/a.ts', at('src/a.ts')],
  ])('%s writes %j', (command, files) => {
    expect(powerShellWrites(command, BASE)).toEqual({ kind: 'files', files });
  });

  it.each([
    'Get-ChildItem src',
    'Get-Content src/a.ts | Select-String x',
    "Write-Output 'a > b'",
    'git status',
    'ls > $null',
  ])('%s writes nothing', (command) => {
    expect(powerShellWrites(command, BASE)).toEqual({ kind: 'none' });
  });

  it.each([
    'Set-Content $path x',
    '"x" > "$env:TEMP/a.ts"',
    'Remove-Item src/*.ts',
    'Invoke-Expression "rm src/a.ts"',
    'pwsh -Command "Remove-Item src/a.ts"',
    'Get-ChildItem | ForEach-Object { Remove-Item $_ }',
    'Remove-Item (Join-Path src a.ts)',
    'Set-Content ~/a.ts x',
    "Set-Content 'unterminated",
    'Remove-Item src/a.ts,src/b.ts',
  ])('%s is unparsed', (command) => {
    expect(powerShellWrites(command, BASE).kind).toBe('unparsed');
  });
});
