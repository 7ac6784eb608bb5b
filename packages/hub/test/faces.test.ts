import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { requestJson, type SignedBody, type SignedClient, signedFetch } from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { commandHelp, commandTree, flagName, generatedCommands } from '../src/cli/generated.js'
import type { Io } from '../src/cli/io.js'
import { main } from '../src/cli/main.js'
import { DOCUMENTED_ROUTES } from '../src/http/server.js'
import { MCP_DOCS } from '../src/mcp/http.js'
import { createMcpServer } from '../src/mcp/server.js'
import { AUTH_KINDS, sessionAuths } from '../src/ops/auth-kinds.js'
import type { Auth, Operation } from '../src/ops/operation.js'
import { COMPOSITE_TOOLS, OPERATIONS } from '../src/ops/registry.js'
import { remoteInvoke } from '../src/ops/remote.js'
import { VERSION } from '../src/version.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const
const openApiPath = (p: string) => p.replace(/:([A-Za-z_]+)/g, '{$1}')
const byName = new Map(OPERATIONS.map((op) => [op.name, op]))

/** The adapter modules generated faces come from: routes, OpenAPI, MCP tools, remote calls, CLI. */
const ADAPTERS = [
  'src/ops/http.ts',
  'src/ops/openapi.ts',
  'src/ops/mcp.ts',
  'src/ops/remote.ts',
  'src/ops/local.ts',
  'src/cli/generated.ts',
  'src/cli/run-command.ts',
  'src/cli/completion.ts',
]

function captureIo(): Io & { out: string[]; err: string[] } {
  const out: string[] = []
  const err: string[] = []
  return { out, err, stdout: (s) => out.push(s), stderr: (s) => err.push(s) }
}

/** Every tool name a session with these auths should be offered, from the registry. */
function expectedTools(auths: ReadonlySet<Auth>): Set<string> {
  const names = new Set<string>()
  for (const op of OPERATIONS) {
    if (op.tool !== false && op.auth !== 'operator' && auths.has(op.auth)) names.add(op.tool.name)
  }
  for (const c of COMPOSITE_TOOLS) if (auths.has(c.auth)) names.add(c.name)
  return names
}

test('the registry holds each operation once, by name, route and tool', () => {
  assert.equal(byName.size, OPERATIONS.length)
  const routes = OPERATIONS.map((op) => `${op.method} ${op.path}`)
  assert.equal(new Set(routes).size, routes.length)
  const tools = [
    ...OPERATIONS.flatMap((op) => (op.tool ? [op.tool.name] : [])),
    ...COMPOSITE_TOOLS.map((c) => c.name),
  ]
  assert.equal(new Set(tools).size, tools.length)
  for (const op of OPERATIONS) {
    if (op.auth === 'operator') assert.equal(op.tool, false, `${op.name} is operator work`)
  }
  for (const c of COMPOSITE_TOOLS) {
    for (const op of c.ops) {
      assert.equal(byName.get(op.name), op, `${c.name} reaches ${op.name}, not in the registry`)
      assert.notEqual(op.auth, 'operator', `${c.name} reaches operator work`)
    }
  }
})

test("only an operation that declares a long poll reads its caller's signal", () => {
  // The HTTP face makes an aborting signal (a controller and a close listener) only for these.
  for (const op of OPERATIONS) {
    assert.equal(/\bsignal\b/.test(op.run.toString()), op.longPoll === true, op.name)
  }
})

test('every operation is one CLI command, and every generated command is an operation', async () => {
  const commands = generatedCommands()
  assert.equal(commands.length, OPERATIONS.length)
  const tree = commandTree(commands)
  const seen = new Set<Operation>()
  for (const [level, groups] of [
    ['', tree.groups],
    ['admin ', tree.admin],
  ] as const) {
    for (const [group, list] of groups) {
      const actions = list.map((c) => c.words[1])
      assert.equal(new Set(actions).size, actions.length, `${level}${group}: an action twice`)
      for (const c of list) {
        assert.equal(
          byName.get(c.op.name),
          c.op,
          `${level}${c.words.join(' ')} is not an operation`,
        )
        seen.add(c.op)
      }
    }
  }
  assert.equal(seen.size, OPERATIONS.length)
  // Dispatch reaches each command: its help names its operation's route, with its path
  // parameters by the command line's argument names (`:handoff_id` reads `<handoff-id>`).
  for (const c of commands) {
    const io = captureIo()
    const argv = [...(c.admin ? ['admin'] : []), ...c.words, '--help']
    assert.equal(await main(argv, io), 0, `${argv.join(' ')}: ${io.err.join('\n')}`)
    assert.equal(io.out.join('\n'), commandHelp(c), `${argv.join(' ')} is not ${c.op.name}`)
    const route = c.op.path.replace(/:([A-Za-z_]+)/g, (_, n: string) => `<${flagName(n)}>`)
    assert.ok(
      io.out.join('\n').includes(`${c.op.method} ${route}`),
      `${argv.join(' ')} is not ${c.op.name}`,
    )
  }
})

/** Every module where a face meets auth: each reads the one table, and none switches on a kind. */
const AUTH_FACES = [
  'src/identity/http.ts',
  'src/ops/http.ts',
  'src/ops/auth.ts',
  'src/ops/openapi.ts',
  'src/ops/mcp.ts',
  'src/ops/remote.ts',
  'src/cli/generated.ts',
  'src/cli/run-command.ts',
  'src/mcp/http.ts',
  'src/cli/mcp-command.ts',
]

test('every auth kind has one table entry, and every face reads it', () => {
  const kinds = Object.keys(AUTH_KINDS).sort()
  assert.deepEqual(kinds, ['handoff-token', 'none', 'operator', 'signature'])
  for (const op of OPERATIONS) assert.ok(kinds.includes(op.auth), `${op.name}: ${op.auth}`)
  for (const kind of kinds as Auth[]) {
    const entry = AUTH_KINDS[kind]
    // A kind with a credential names its flag, and says what it adds to every answer.
    assert.equal(entry.cli.credential === undefined, entry.credential === 'nothing', kind)
    assert.equal(entry.errors.length === 0, entry.credential === 'nothing', kind)
    assert.equal(entry.security.length === 0, entry.credential === 'nothing', kind)
    assert.equal(entry.signed, entry.remote === 'signed', kind)
  }
  const root = path.resolve(import.meta.dirname, '..')
  // A branch on a kind (`op.auth === 'operator'`, `case 'signature':`) or a table keyed by kinds.
  const literal =
    /\bauth\s*[!=]==\s*'|case '(none|handoff-token|signature|operator)'|'handoff-token':/
  for (const file of AUTH_FACES) {
    const text = readFileSync(path.join(root, file), 'utf8')
    assert.match(text, /AUTH_KINDS|sessionAuths/, `${file} does not read the auth table`)
    assert.doesNotMatch(text, literal, `${file} decides on an auth kind itself`)
  }
  // MCP sessions are offered the kinds the table offers them, never operator work.
  assert.deepEqual([...sessionAuths(false)].sort(), ['handoff-token', 'none'])
  assert.deepEqual([...sessionAuths(true)].sort(), ['handoff-token', 'none', 'signature'])
})

/** An adapter's code without its comments, which may name an operation to explain a rule. */
function adapterCode(file: string): string {
  const text = readFileSync(path.resolve(import.meta.dirname, '..', file), 'utf8')
  return text
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .join('\n')
}

test('no adapter names an operation: a face is made from the registry, never per route', () => {
  const code = ADAPTERS.map((f) => [f, adapterCode(f)] as const)
  for (const op of OPERATIONS) {
    const names = [op.name, op.path, ...(op.tool ? [op.tool.name] : [])]
    for (const [file, text] of code) {
      for (const name of names) {
        for (const quote of ["'", '"', '`']) {
          assert.ok(!text.includes(`${quote}${name}${quote}`), `${file} names ${op.name} (${name})`)
        }
      }
    }
  }
})

// A face made from the registry costs the same code however many operations there are, so
// lines per operation only fall as operations are added; a face that grows with each one
// crosses this ceiling (set with headroom over what the faces cost).
const ADAPTER_LINES_PER_OPERATION = 25

test('adapter code per operation stays under its ceiling', (t) => {
  const lines = ADAPTERS.map((f) => adapterCode(f).split('\n').length)
  const total = lines.reduce((a, b) => a + b, 0)
  const perOp = total / OPERATIONS.length
  t.diagnostic(
    `adapter code: ${total} lines for ${OPERATIONS.length} operations = ${perOp.toFixed(1)} lines per operation (${ADAPTERS.map((f, i) => `${path.basename(f)} ${lines[i]}`).join(', ')})`,
  )
  assert.ok(
    perOp <= ADAPTER_LINES_PER_OPERATION,
    `${perOp.toFixed(1)} lines of adapter code per operation, over ${ADAPTER_LINES_PER_OPERATION}`,
  )
})

for (const store of testStores) {
  describe(`every face serves exactly the registry (${store.name})`, () => {
    let hub: TestHub
    let agent: SignedClient
    const clients: Client[] = []
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
      agent = await signedAgent(hub)
    })
    after(async () => {
      for (const c of clients) await c.close()
      await hub.close()
    })

    test('HTTP: a route for every operation', () => {
      for (const op of OPERATIONS) {
        assert.ok(hub.app.hasRoute({ method: op.method, url: op.path }), `${op.name}: no route`)
      }
    })

    test('OpenAPI: every operation documented, and nothing else but the documented routes', async () => {
      const doc = (await requestJson(hub.url, 'GET', '/openapi.json')).body as {
        paths: Record<string, Record<string, { operationId?: string }>>
      }
      for (const op of OPERATIONS) {
        const entry = doc.paths[openApiPath(op.path)]?.[op.method.toLowerCase()]
        assert.equal(entry?.operationId, op.name, `${op.name} is not in the OpenAPI document`)
      }
      const extra = new Set(
        [...DOCUMENTED_ROUTES, ...MCP_DOCS].map((r) => `${r.method} ${openApiPath(r.path)}`),
      )
      for (const [p, item] of Object.entries(doc.paths)) {
        for (const method of METHODS) {
          const entry = item[method]
          if (!entry) continue
          const key = `${method.toUpperCase()} ${p}`
          if (extra.has(key)) continue
          const op = entry.operationId ? byName.get(entry.operationId) : undefined
          assert.ok(op, `${key} (${entry.operationId}) is not an operation`)
          assert.equal(`${op.method} ${openApiPath(op.path)}`, key)
        }
      }
    })

    const signed = new Set<Auth>(['none', 'handoff-token', 'signature'])
    const anonymous = new Set<Auth>(['none', 'handoff-token'])

    async function toolsOf(client: Client): Promise<Set<string>> {
      clients.push(client)
      return new Set((await client.listTools()).tools.map((t) => t.name))
    }

    test('MCP over Streamable HTTP: signed, every agent tool; unsigned, the anonymous ones', async () => {
      const signedClient = new Client({ name: 'faces', version: '1.0.0' })
      await signedClient.connect(
        new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
          fetch: signedFetch(agent.identity),
        }),
      )
      assert.deepEqual([...(await toolsOf(signedClient))].sort(), [...expectedTools(signed)].sort())
      const plain = new Client({ name: 'faces', version: '1.0.0' })
      await plain.connect(new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`)))
      assert.deepEqual([...(await toolsOf(plain))].sort(), [...expectedTools(anonymous)].sort())
    })

    test('MCP as `baton mcp --identity` builds it (stdio): the same tools', async () => {
      const server = createMcpServer(
        {
          invoke: remoteInvoke({
            plain: (method, p, body, headers, signal) =>
              requestJson(hub.url, method, p, body, { headers, signal }),
            signed: (method, p, body, headers, signal) =>
              agent.request(method, p, body as SignedBody, headers, { signal }),
          }),
          auths: signed,
        },
        VERSION,
      )
      const [a, b] = InMemoryTransport.createLinkedPair()
      await server.connect(a)
      const client = new Client({ name: 'faces', version: '1.0.0' })
      await client.connect(b)
      const names = await toolsOf(client)
      assert.deepEqual([...names].sort(), [...expectedTools(signed)].sort())
    })
  })
}
