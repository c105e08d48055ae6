/** Shell completion scripts, generated from the contract table so they never drift from it. */
import { AgentLockError } from '../core/errors.js';
import { type CommandSpec, GLOBAL_FLAGS } from './command.js';

const longFlags = (flags: string) => flags.split(/[ ,]+/).filter((f) => f.startsWith('--'));

/** `commands`: the program's command table (cli/contract.ts). */
export function completionScript(shell: string, program: string, commands: readonly CommandSpec[]): string {
  const names = commands.flatMap((c) => [c.name, ...(c.aliases ?? [])]);
  const globals = GLOBAL_FLAGS.flatMap((f) => longFlags(f.flags));
  const fn = `_${program.replace(/[^A-Za-z0-9]/g, '_')}`;
  if (shell === 'bash') {
    const cases = commands
      .map(
        (c) =>
          `    ${[c.name, ...(c.aliases ?? [])].join('|')}) flags="${[...c.flags.flatMap((f) => longFlags(f.flags)), ...globals].join(' ')}" ;;`,
      )
      .join('\n');
    return `# bash completion for ${program}: eval "$(${program} completion bash)"
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd="" i flags
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -*) ;; *) cmd="\${COMP_WORDS[i]}"; break ;; esac
  done
  if [[ -z "$cmd" ]]; then
    COMPREPLY=($(compgen -W "${names.join(' ')} ${globals.join(' ')}" -- "$cur")); return
  fi
  case "$cmd" in
${cases}
    *) flags="${globals.join(' ')}" ;;
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
}
complete -o filenames -F ${fn} ${program}
`;
  }
  if (shell === 'zsh') {
    const described = commands.map((c) => `'${c.name}:${c.summary.replace(/'/g, '')}'`).join(' ');
    return `#compdef ${program}
# zsh completion for ${program}: eval "$(${program} completion zsh)"
${fn}() {
  local -a commands
  commands=(${described})
  if (( CURRENT == 2 )); then _describe 'command' commands; else _files; fi
}
compdef ${fn} ${program}
`;
  }
  if (shell === 'fish') {
    const lines = commands.map(
      (c) =>
        `complete -c ${program} -n '__fish_use_subcommand' -a ${c.name} -d '${c.summary.replace(/'/g, '')}'`,
    );
    for (const c of commands) {
      for (const f of c.flags) {
        for (const long of longFlags(f.flags)) {
          lines.push(
            `complete -c ${program} -n '__fish_seen_subcommand_from ${c.name}' -l ${long.slice(2)} -d '${f.description.replace(/'/g, '')}'`,
          );
        }
      }
    }
    return `# fish completion for ${program}: ${program} completion fish | source\n${lines.join('\n')}\n`;
  }
  throw new AgentLockError(
    'E_USAGE',
    `completion supports bash, zsh or fish (got ${JSON.stringify(shell)})`,
    {
      hint: 'for example completion bash',
    },
  );
}
