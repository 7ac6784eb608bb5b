import { parseArgs } from 'node:util'
import { requestJson } from '@baton/client'
import { AdmissionDecision } from '@baton/protocol'
import { createApp } from '../app.js'
import { loadConfig } from '../config.js'
import { decidePrincipal, listPrincipals, readPrincipal } from '../identity/operations.js'
import type { PrincipalPage } from '../identity/service.js'
import { createLogger } from '../log.js'
import { inputSchemas, type Operation } from '../ops/operation.js'
import { remoteInvoke } from '../ops/remote.js'
import { parseInput } from '../validation.js'
import { ADMISSION } from './commands.js'
import { commandTree, runGroup } from './generated.js'
import { type Io, UsageError } from './io.js'
import { traceOfCommand } from './trace.js'

const USAGE = `baton admin <command> (--hub URL [--token T] | --data-dir D | --database-url U)

  list [--state pending|approved|rejected|suspended]   list enrolled principals, oldest first:
       [--limit N] [--cursor C] [--all]                every page by default (or with --all);
                                                        with --limit or --cursor one page and
                                                        its next_cursor
  show <principal>                                      one principal
  approve <principal>                                   admit a pending (or suspended, rejected) key
  reject <principal>                                    refuse a key
  suspend <principal>                                   stop an admitted key

With --hub, the hub's admin API is called with the operator token (--token or BATON_ADMIN_TOKEN).
Otherwise the command works on the hub's database directly: --database-url (or DATABASE_URL) for
PostgreSQL, else the SQLite file under --data-dir (or BATON_DATA_DIR, default ./data). Both ways
run the same rules. Admission is never an MCP tool.

Every operator operation of the admin API is also a command of its own:
${[...commandTree().admin].map(([group, list]) => `  baton admin ${group} ${list.map((c) => c.words[1]).join('|')}`).join('\n')}`

/**
 * `baton admin`: the operator's admission decisions, over the admin API or on the database, and
 * every operator operation as a generated command (`baton admin <group> <command>`).
 */
export async function adminCommand(argv: string[], io: Io): Promise<number> {
  if (argv[0] && !(ADMISSION as readonly string[]).includes(argv[0]) && !argv[0].startsWith('-')) {
    const tree = commandTree()
    const code = await runGroup(tree.admin, argv, io, true)
    if (code !== undefined) return code
    throw new UsageError(`unknown admin command ${JSON.stringify(argv[0])}\n\n${USAGE}`)
  }
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      hub: { type: 'string' },
      token: { type: 'string' },
      'admin-token': { type: 'string' },
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      state: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      all: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  const [sub, principal] = positionals
  if (values.help || !sub) {
    io.stdout(USAGE)
    return values.help ? 0 : 64
  }
  if (!(ADMISSION as readonly string[]).includes(sub)) {
    throw new UsageError(`unknown admin command ${JSON.stringify(sub)}\n\n${USAGE}`)
  }
  if (sub !== 'list' && !principal) throw new UsageError(`admin ${sub} needs a principal`)
  if (values.all && values.cursor)
    throw new UsageError('--all starts at the first page: drop --cursor')
  // One page when the caller names where or how much; otherwise (or with --all) every page.
  const everyPage =
    values.all === true || (values.limit === undefined && values.cursor === undefined)
  const pageQuery = (cursor: string | undefined) => ({
    ...(values.state ? { state: values.state } : {}),
    ...(values.limit ? { limit: values.limit } : {}),
    ...(cursor ? { cursor } : {}),
  })
  /** Reads one page, or every page from the first, through `read`. */
  const listPages = async (
    read: (q: Record<string, string>) => Promise<PrincipalPage>,
  ): Promise<PrincipalPage> => {
    let page = await read(pageQuery(values.cursor))
    if (!everyPage) return page
    const principals = [...page.principals]
    while (page.next_cursor) {
      page = await read(pageQuery(page.next_cursor))
      principals.push(...page.principals)
    }
    return { principals, next_cursor: null }
  }

  let result: unknown
  if (values.hub) {
    const token = values['admin-token'] ?? values.token ?? process.env.BATON_ADMIN_TOKEN
    if (!token) throw new UsageError('--hub needs --token or BATON_ADMIN_TOKEN')
    const hub = values.hub
    // The same operations the generated `baton admin principal …` commands send.
    const invoke = remoteInvoke({
      plain: (method, path, body, headers, signal) =>
        requestJson(hub, method, path, body, {
          headers: { ...headers, authorization: `Bearer ${token}` },
          signal,
        }),
    })
    const trace = traceOfCommand(undefined)
    const call = (op: Operation, params: Record<string, string>, query = {}) =>
      invoke(
        op,
        { params, query, body: undefined },
        { signal: new AbortController().signal, trace },
      )
    result =
      sub === 'list'
        ? await listPages(async (q) => (await call(listPrincipals, {}, q)) as PrincipalPage)
        : sub === 'show'
          ? await call(readPrincipal, { principal: principal! })
          : await call(decidePrincipal, { principal: principal!, decision: sub })
  } else {
    const config = loadConfig(process.env, {
      ...(values['data-dir'] ? { 'data-dir': values['data-dir'] } : {}),
      ...(values['database-url'] ? { 'database-url': values['database-url'] } : {}),
    })
    // The same composition root as the server, so a decision here runs exactly the hub's rules.
    const ctx = await createApp(config, {
      log: createLogger('warn', { write: (line: string) => io.stderr(line) }),
    })
    try {
      // The admin operations' own schemas, as the hub would read the same words.
      const pageQuery = inputSchemas(listPrincipals, config).query!
      if (sub === 'list') {
        result = await listPages((q) => ctx.identity.list(parseInput(pageQuery, q, 'query')))
      } else if (sub === 'show') result = await ctx.identity.get(principal!)
      else
        result = await ctx.identity.decide(
          principal!,
          parseInput(AdmissionDecision, sub, 'decision'),
        )
    } finally {
      await ctx.close()
    }
  }
  io.stdout(JSON.stringify(result, null, 2))
  return 0
}
