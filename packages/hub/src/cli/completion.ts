import { ADMISSION, HANDWRITTEN } from './commands.js'
import { COMPUTE_RUN_FLAGS } from './compute-command.js'
import { type CommandTree, commandFlags, commandTree } from './generated.js'
import { type Io, UsageError } from './io.js'

/**
 * What may follow each command prefix (`baton`, `baton resource`, `baton resource update`),
 * from the same tree the commands are dispatched by.
 */
export function completionTable(tree: CommandTree = commandTree()): Map<string, string[]> {
  const table = new Map<string, string[]>()
  table.set('baton', [...Object.keys(HANDWRITTEN), ...tree.groups.keys()])
  for (const [name, { next }] of Object.entries(HANDWRITTEN)) {
    if (name !== 'admin') table.set(`baton ${name}`, [...next])
  }
  const level = (prefix: string, groups: CommandTree['groups']) => {
    for (const [group, list] of groups) {
      const actions = new Set(table.get(`${prefix} ${group}`) ?? [])
      for (const c of list) {
        actions.add(c.words[1])
        table.set(`${prefix} ${group} ${c.words[1]}`, [
          ...new Set([
            ...(table.get(`${prefix} ${group} ${c.words[1]}`) ?? []),
            ...commandFlags(c).map((f) => `--${f}`),
          ]),
        ])
      }
      table.set(`${prefix} ${group}`, [...actions])
    }
  }
  level('baton', tree.groups)
  const run = table.get('baton compute run')
  if (run) table.set('baton compute run', [...new Set([...run, ...COMPUTE_RUN_FLAGS])])
  // Operator commands whose words no agent command takes answer without `admin` too.
  for (const [group, list] of tree.admin) {
    if (tree.groups.has(group)) level('baton', new Map([[group, list]]))
  }
  table.set('baton admin', [...Object.keys(ADMISSION), ...tree.admin.keys()])
  level('baton admin', tree.admin)
  return table
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

function bash(table: Map<string, string[]>): string {
  const entries = [...table].map(([k, v]) => `  [${quote(k)}]=${quote(v.join(' '))}`).join('\n')
  return `# baton completion for bash: source <(baton completion bash)
declare -gA _baton_tree=(
${entries}
)
_baton() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" key=baton w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ $w == -* ]] && continue
    [[ -n "\${_baton_tree["$key $w"]+set}" ]] && key="$key $w"
  done
  COMPREPLY=($(compgen -W "\${_baton_tree[$key]}" -- "$cur"))
}
complete -o default -F _baton baton
`
}

function zsh(table: Map<string, string[]>): string {
  const entries = [...table].map(([k, v]) => `  ${quote(k)} ${quote(v.join(' '))}`).join('\n')
  return `#compdef baton
# baton completion for zsh: source <(baton completion zsh)
typeset -gA _baton_tree
_baton_tree=(
${entries}
)
_baton() {
  local key=baton next w
  for w in \${words[2,CURRENT-1]}; do
    [[ $w == -* ]] && continue
    next="$key $w"
    (( \${+_baton_tree[$next]} )) && key=$next
  done
  compadd -- \${=_baton_tree[$key]}
}
compdef _baton baton
`
}

function fish(table: Map<string, string[]>): string {
  const keys = [...table.keys()].map(quote).join(' ')
  const cases = [...table]
    .map(([k, v]) => `    case ${quote(k)}\n      printf '%s\\n' ${v.map(quote).join(' ')}`)
    .join('\n')
  return `# baton completion for fish: baton completion fish | source
set -g __baton_keys ${keys}
function __baton_next
  set -l key baton
  set -l words (commandline -opc)
  set -e words[1]
  for w in $words
    string match -q -- '-*' $w; and continue
    contains -- "$key $w" $__baton_keys; and set key "$key $w"
  end
  switch $key
${cases}
  end
end
complete -c baton -f -a '(__baton_next)'
`
}

/** `baton completion bash|zsh|fish`: a completion script generated from the command tree. */
export async function completionCommand(argv: string[], io: Io): Promise<number> {
  const [shell] = argv
  if (shell === '--help' || shell === '-h') {
    io.stdout(
      'baton completion bash|zsh|fish\n\nPrints a completion script for the shell, e.g. `source <(baton completion bash)` or `baton completion fish | source`.',
    )
    return 0
  }
  const make = { bash, zsh, fish }[shell as 'bash' | 'zsh' | 'fish']
  if (!make) throw new UsageError('completion takes bash, zsh or fish')
  io.stdout(make(completionTable()))
  return 0
}
