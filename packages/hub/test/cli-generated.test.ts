import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createIdentity, saveIdentity } from '@baton/client'
import { defineContract } from '@baton/protocol'
import { indexOf } from '../src/cli/command-index.js'
import { GROUP_NOUNS, HANDWRITTEN, resolveWords } from '../src/cli/commands.js'
import { completionTable } from '../src/cli/completion.js'
import { commandTree, commandWords, flagName, parseTime } from '../src/cli/generated.js'
import type { Io } from '../src/cli/io.js'
import { main } from '../src/cli/main.js'
import { bind } from '../src/ops/operation.js'
import { OPERATIONS } from '../src/ops/registry.js'
import { batonBin, repoRoot, startTestHub, type TestHub, testStores } from './support.js'

const ADMIN = 'op-secret-0123456789abcdefghijklmnopqrstuv'

interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Runs `baton` in this process, as the bin does, with its output captured. */
async function baton(argv: string[]): Promise<Run> {
  const out: string[] = []
  const err: string[] = []
  const io: Io = { stdout: (s) => out.push(s), stderr: (s) => err.push(s) }
  const code = await main(argv, io)
  return { code, stdout: out.join('\n'), stderr: err.join('\n') }
}

/** Runs the `baton` bin as a process, with stdin. */
function batonProcess(argv: string[], stdin = ''): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [batonBin, ...argv], (error, stdout, stderr) => {
      const code = error ? (error as { code?: number }).code : 0
      resolve({ code: typeof code === 'number' ? code : 2, stdout, stderr })
    })
    child.stdin?.end(stdin)
  })
}

test('command words are derived from the path and method when not declared', () => {
  const op = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', p: string) =>
    bind(
      defineContract({
        name: 'x',
        summary: 'x',
        tags: [],
        method,
        path: p,
        auth: 'none',
        output: OPERATIONS[0]!.output,
        errors: [],
        tool: false,
      }),
      async () => ({}),
    )
  assert.deepEqual(commandWords(op('GET', '/v1/widgets')), ['widgets', 'list'])
  assert.deepEqual(commandWords(op('GET', '/v1/widgets/:id')), ['widgets', 'read'])
  assert.deepEqual(commandWords(op('PATCH', '/v1/widgets/:id')), ['widgets', 'update'])
  assert.deepEqual(commandWords(op('DELETE', '/v1/widgets/:id')), ['widgets', 'delete'])
  assert.deepEqual(commandWords(op('POST', '/v1/widgets')), ['widgets', 'create'])
  assert.deepEqual(commandWords(op('GET', '/v1/widgets/:id/history')), ['widgets', 'history'])
  assert.deepEqual(commandWords(op('POST', '/admin/v1/widget-runs/:id/stop')), [
    'widget-runs',
    'stop',
  ])
  assert.equal(flagName('budgetMicros'), 'budget-micros')
  assert.equal(flagName('notify_url'), 'notify-url')
})

test('every generated group is a singular noun of the one table, and no group is an older word', () => {
  const tree = commandTree()
  const older = Object.values(GROUP_NOUNS).flatMap((g) => ('was' in g ? g.was : []))
  for (const group of [...tree.groups.keys(), ...tree.admin.keys()]) {
    assert.ok(group in GROUP_NOUNS, `${group} is in GROUP_NOUNS`)
    assert.ok(!older.includes(group as never), `${group} is not an alias`)
  }
  const words = [...tree.groups.values()].flat().map((c) => c.words.join(' '))
  for (const expected of ['grant create', 'grant list', 'grant revoke', 'message send']) {
    assert.ok(words.includes(expected), expected)
  }
  assert.ok(!words.some((w) => w.startsWith('capabilities ') || w === 'grant delete'))
})

test('each older word dispatches to the command its noun names, actions renamed included', async () => {
  assert.deepEqual(resolveWords('capabilities', 'delete'), ['grant', 'revoke'])
  assert.deepEqual(resolveWords('messages', 'create'), ['message', 'send'])
  assert.deepEqual(resolveWords('messages', 'send'), ['message', 'send'])
  assert.deepEqual(resolveWords('resources', 'list'), ['resource', 'list'])
  assert.deepEqual(resolveWords('handoff', 'read'), ['handoff', 'read'])
  const tree = commandTree()
  for (const [noun, g] of Object.entries(GROUP_NOUNS)) {
    if (!('was' in g)) continue
    const admin = tree.admin.has(noun) && !tree.groups.has(noun)
    const commands = (admin ? tree.admin : tree.groups).get(noun) ?? []
    assert.ok(commands.length > 0, noun)
    const renamed = Object.entries('actions' in g ? g.actions : {})
    for (const word of g.was) {
      const pairs = [
        ...commands.map((c) => [c.words[1], c.words[1]] as const),
        ...renamed.map(([from, to]) => [from, to] as const),
      ]
      for (const [typed, action] of pairs) {
        const prefix = admin ? ['admin'] : []
        const old = await baton([...prefix, word, typed, '--help'])
        const now = await baton([...prefix, noun, action, '--help'])
        assert.equal(old.code, 0, `${word} ${typed}: ${old.stderr}`)
        assert.equal(old.stdout, now.stdout, `${word} ${typed} is ${noun} ${action}`)
      }
    }
  }
  assert.equal((await baton(['capabilities', 'frobnicate'])).code, 64)
})

test('help lists the new nouns as groups and the older words once, as aliases', async () => {
  const top = await baton(['--help'])
  for (const old of ['resources', 'capabilities', 'messages', 'hops', 'guides', 'principals']) {
    assert.doesNotMatch(top.stdout, new RegExp(`^  ${old} `, 'm'), old)
  }
  const aliases = top.stdout.split('\n').filter((l) => /capabilities/.test(l))
  assert.equal(aliases.length, 1, 'the aliases are one line')
  assert.match(aliases[0]!, /capabilities delete → grant revoke/)
  const group = await baton(['capabilities', '--help'])
  assert.match(group.stdout, /^baton grant <command>/)
  assert.match(group.stdout, /^ {2}revoke /m)
  const admin = await baton(['admin', '--help'])
  assert.match(admin.stdout, /baton admin principal list/)
})

test('help: the top level lists the groups; each command its flags, types and what is required', async () => {
  const top = await baton(['--help'])
  assert.equal(top.code, 0)
  for (const group of ['handoff', 'resource', 'grant', 'message', 'transfer', 'principal']) {
    assert.match(top.stdout, new RegExp(`^  ${group} `, 'm'))
  }
  const help = await baton(['resource', 'update', '--help'])
  assert.equal(help.code, 0)
  assert.match(help.stdout, /PATCH \/v1\/resources\/<id>/)
  assert.match(help.stdout, /--expected-version\s+integer\s+required/)
  assert.match(help.stdout, /--data\s+json\s+required/)
  assert.match(help.stdout, /--identity/)
  assert.doesNotMatch(help.stdout, /--admin-token/)
  const group = await baton(['resource'])
  assert.equal(group.code, 64)
})

test('usage errors exit 64: an unknown command, flag or missing argument', async () => {
  assert.equal((await baton(['resource', 'frobnicate'])).code, 64)
  assert.equal((await baton(['resource', 'read', 'rs_1', '--nope', 'x'])).code, 64)
  assert.equal((await baton(['resource', 'read', '--hub', 'http://127.0.0.1:9'])).code, 64)
  assert.equal(
    (await baton(['resource', 'read', 'rs_1', '--hub', 'http://127.0.0.1:9'])).code,
    64,
    'a signed operation without an identity',
  )
  const before = process.env.BATON_HUB
  delete process.env.BATON_HUB
  try {
    assert.equal((await baton(['handoff', 'read', 'h', '--token', 't'])).code, 64)
  } finally {
    if (before !== undefined) process.env.BATON_HUB = before
  }
  assert.equal((await baton(['resource', 'create', '--data', '{nope'])).code, 64)
})

test('an unknown command or group gets the nearest one: did you mean', async () => {
  const action = await baton(['handoff', 'advnce'])
  assert.equal(action.code, 64)
  assert.match(action.stderr, /unknown command "handoff advnce" \(did you mean handoff advance\?\)/)
  const group = await baton(['handof', 'read'])
  assert.equal(group.code, 64)
  assert.match(group.stderr, /unknown command "handof" \(did you mean handoff\?\)/)
  const far = await baton(['zzzzzz'])
  assert.doesNotMatch(far.stderr, /did you mean/)
})

test('an unknown option is said as baton <command> says it, with the nearest flag', async () => {
  const run = await baton(['handoff', 'advance', 'ho_1', 'done', '--form', 'open'])
  assert.equal(run.code, 64)
  assert.equal(
    run.stderr.split('\n')[0],
    'baton handoff advance: unknown option --form (did you mean --from?)',
  )
  const serve = await baton(['serve', '--prot', '1'])
  assert.equal(serve.code, 64)
  assert.equal(serve.stderr.split('\n')[0], 'baton serve: unknown option --prot')
})

test('bare baton is a usage error: usage on stderr, exit 64; --help is stdout, exit 0', async () => {
  const bare = await baton([])
  assert.equal(bare.code, 64)
  assert.equal(bare.stdout, '')
  assert.match(bare.stderr, /^baton <command>/)
  const help = await baton(['--help'])
  assert.equal(help.code, 0)
  assert.equal(help.stderr, '')
  assert.match(help.stdout, /^baton <command>/)
})

test('help shows enum values, time flags and path parameters by their argument names', async () => {
  const grant = await baton(['grant', 'create', '--help'])
  assert.match(grant.stdout, /--actions\s+json \[resource:read\|resource:update\]\s+required/)
  assert.match(grant.stdout, /--expires-at\s+time\|duration\s+required/)
  const advance = await baton(['handoff', 'advance', '--help'])
  assert.doesNotMatch(advance.stdout, /\{state\}|:state|:handoff_id/)
  assert.match(advance.stdout, /Move a handoff to <state>/)
  assert.match(advance.stdout, /POST \/services\/v1\/handoff\/<handoff-id>\/<state>/)
})

test('a time flag takes a duration from now', () => {
  const now = () => Date.UTC(2026, 11, 4, 12)
  assert.equal(parseTime('2h', now), '2026-12-04T14:00:00.000Z')
  assert.equal(parseTime('90s', now), '2026-12-04T12:01:30.000Z')
  assert.equal(parseTime('7d', now), '2026-12-11T12:00:00.000Z')
  assert.equal(parseTime('2026-12-05T00:00:00Z', now), '2026-12-05T00:00:00Z')
  assert.equal(parseTime('2 h', now), '2 h', 'anything else is left for the hub to refuse')
})

test('a network failure exits 2 and says its cause', async () => {
  // A port nothing listens on: the connection is refused.
  const run = await batonProcess([
    'handoff',
    'read',
    'h_1',
    '--token',
    't',
    '--hub',
    'http://127.0.0.1:59999',
  ])
  assert.equal(run.code, 2)
  assert.match(run.stderr, /ECONNREFUSED/)
})

test('completion: bash, zsh and fish scripts from the command tree', () => {
  const table = completionTable()
  assert.ok(table.get('baton')?.includes('resource'))
  assert.ok(table.get('baton')?.includes('admin'))
  // Every hand-written command completes, from the same table `baton` dispatches by.
  for (const name of Object.keys(HANDWRITTEN)) assert.ok(table.get('baton')?.includes(name), name)
  assert.ok(table.get('baton')?.includes('dev'))
  assert.ok(table.get('baton admin')?.includes('approve'))
  assert.ok(table.get('baton resource')?.includes('update'))
  assert.ok(table.get('baton resource update')?.includes('--expected-version'))
  assert.ok(table.get('baton admin')?.includes('principal'))
  assert.ok(table.get('baton transfer')?.includes('token'), 'operator commands without admin')
  for (const old of ['resources', 'capabilities', 'messages', 'hops', 'guides']) {
    assert.ok(!table.get('baton')?.includes(old), `${old} is not completed`)
  }
  assert.ok(!table.get('baton admin')?.includes('principals'))
  assert.deepEqual(table.get('baton grant'), ['create', 'list', 'revoke'])
  const script = spawnSync(process.execPath, [batonBin, 'completion', 'bash'], {
    encoding: 'utf8',
  })
  assert.equal(script.status, 0)
  const complete = (words: string[]) => {
    const run = spawnSync(
      'bash',
      [
        '-c',
        `${script.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _baton; printf '%s\\n' "\${COMPREPLY[@]}"`,
      ],
      { encoding: 'utf8' },
    )
    assert.equal(run.status, 0, run.stderr)
    return run.stdout.trim().split('\n')
  }
  assert.deepEqual(complete(['baton', 'reso']), ['resource'])
  assert.deepEqual(complete(['baton', 'resource', 'upd']), ['update'])
  assert.deepEqual(complete(['baton', 'grant', 'rev']), ['revoke'])
  assert.ok(
    complete(['baton', 'resource', 'update', 'rs_1', '--exp']).includes('--expected-version'),
  )
  assert.ok(complete(['baton', 'admin', 'principal', '']).includes('decide'))
  for (const shell of ['zsh', 'fish']) {
    const out = spawnSync(process.execPath, [batonBin, 'completion', shell], { encoding: 'utf8' })
    assert.equal(out.status, 0)
    assert.match(out.stdout, /resource/)
    // Where the shell is installed, the script parses and (fish) completes.
    if (spawnSync(shell, ['-c', 'exit 0']).error) continue
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-completion-'))
    const file = path.join(dir, `baton.${shell}`)
    writeFileSync(file, out.stdout)
    const parsed = spawnSync(shell, ['-n', file], { encoding: 'utf8' })
    rmSync(dir, { recursive: true, force: true })
    assert.equal(parsed.status, 0, parsed.stderr)
    if (shell === 'fish') {
      const run = spawnSync(
        'fish',
        ['-c', `${out.stdout}\ncomplete -C 'baton resource update rs_1 --exp'`],
        { encoding: 'utf8' },
      )
      assert.match(run.stdout, /^--expected-version$/m)
    }
  }
  assert.equal(spawnSync(process.execPath, [batonBin, 'completion', 'tcsh']).status, 64)
})

for (const store of testStores) {
  describe(`generated commands against a hub (${store.name})`, () => {
    let hub: TestHub
    let dir: string
    let identity: string
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_ADMIN_TOKEN: ADMIN })
      dir = mkdtempSync(path.join(tmpdir(), 'baton-cli-generated-'))
      identity = path.join(dir, 'agent.identity.json')
      await saveIdentity(identity, createIdentity(`${hub.url}/.well-known/agent-net`))
    })
    after(async () => {
      await hub.close()
      rmSync(dir, { recursive: true, force: true })
    })

    test('--identity names the hub: its file holds the discovery URL, so --hub is not needed', async () => {
      const before = process.env.BATON_HUB
      delete process.env.BATON_HUB
      try {
        const me = await baton(['me', 'show', '--identity', identity, '--json'])
        assert.equal(me.code, 0, me.stderr)
        assert.equal(JSON.parse(me.stdout).state, 'approved')
      } finally {
        if (before !== undefined) process.env.BATON_HUB = before
      }
    })

    test('a resource created, updated from a file, and a stale update refused with its wire body', async () => {
      const signed = ['--hub', hub.url, '--identity', identity]
      const created = await baton([
        'resource',
        'create',
        ...signed,
        '--namespace',
        'cli',
        '--kind',
        'note/v1',
        '--data',
        '{"n":1}',
        '--json',
      ])
      assert.equal(created.code, 0, created.stderr)
      const resource = JSON.parse(created.stdout) as { id: string; version: number }
      assert.equal(resource.version, 1)
      const file = path.join(dir, 'data.json')
      writeFileSync(file, '{"n":2}')
      const updated = await baton([
        'resource',
        'update',
        resource.id,
        ...signed,
        '--expected-version',
        '1',
        '--data',
        `@${file}`,
      ])
      assert.equal(updated.code, 0, updated.stderr)
      assert.equal(JSON.parse(updated.stdout).version, 2)
      const stale = await baton([
        'resource',
        'update',
        resource.id,
        ...signed,
        '--expected-version',
        '1',
        '--data',
        '{"n":3}',
        '--json',
      ])
      assert.equal(stale.code, 1)
      assert.equal(JSON.parse(stale.stdout).code, 'version_conflict')
      assert.equal(stale.stdout.trim().includes('\n'), false, 'an error is compact like a success')
      // The older word still answers, against a real hub.
      const read = await baton(['resources', 'read', '--id', resource.id, ...signed, '--json'])
      assert.deepEqual(JSON.parse(read.stdout).data, { n: 2 })
      const bad = await baton(['resource', 'update', resource.id, ...signed, '--body', file])
      assert.equal(bad.code, 1, 'the hub validates the body: a 4xx')
      const missing = await baton(['resource', 'read', 'rs_nope', ...signed, '--json'])
      assert.equal(missing.code, 1)
      assert.equal(typeof JSON.parse(missing.stdout).code, 'string')
    })

    test('a handoff: the whole body from stdin, a token from BATON_TOKEN, a wait that shows progress', async () => {
      const created = await batonProcess(
        ['handoff', 'create', '--hub', hub.url, '--body', '-', '--json'],
        '{"payload":{"task":"stdin"},"note":"n"}',
      )
      assert.equal(created.code, 0, created.stderr)
      const h = JSON.parse(created.stdout) as Record<string, string>
      process.env.BATON_TOKEN = h.owner_token!
      try {
        const read = await baton(['handoff', 'read', h.handoff_id!, '--hub', hub.url])
        assert.equal(read.code, 0, read.stderr)
        assert.deepEqual(JSON.parse(read.stdout).payload, { task: 'stdin' })
        // Version 0 is behind the handoff, so the wait answers at once.
        const waited = await baton([
          'handoff',
          'wait',
          h.handoff_id!,
          '5',
          '--version',
          '0',
          '--hub',
          hub.url,
        ])
        assert.equal(waited.code, 0, waited.stderr)
        assert.match(waited.stderr, /waiting/)
        assert.equal(typeof JSON.parse(waited.stdout).version, 'number')
        const byDefault = await baton([
          'handoff',
          'wait',
          h.handoff_id!,
          '--version',
          '0',
          '--hub',
          hub.url,
        ])
        assert.equal(byDefault.code, 0, 'seconds defaults to 25')
      } finally {
        delete process.env.BATON_TOKEN
      }
    })

    test('a command continues the trace it is given: --traceparent, else TRACEPARENT with TRACESTATE', async () => {
      const T = '4bf92f3577b34da6a3ce929d0e0e4736'
      const flag = `00-${T}-00f067aa0ba90001-01`
      const env = `00-${T}-00f067aa0ba90002-01`
      const handoff = (...more: string[]) =>
        baton(['handoff', 'create', '--hub', hub.url, '--payload', '{"n":1}', '--json', ...more])
      const read = async (created: Run) => {
        const h = JSON.parse(created.stdout) as Record<string, string>
        const res = await fetch(`${hub.url}/services/v1/handoff/${h.handoff_id}`, {
          headers: { authorization: `Bearer ${h.owner_token}` },
        })
        const view = (await res.json()) as { traceparent?: string; tracestate?: string }
        return { traceparent: view.traceparent, tracestate: view.tracestate }
      }
      const byFlag = await handoff('--traceparent', flag)
      assert.equal(byFlag.code, 0, byFlag.stderr)
      assert.deepEqual(await read(byFlag), { traceparent: flag, tracestate: undefined })
      const me = JSON.parse((await baton(['me', 'show', '--identity', identity, '--json'])).stdout)
        .principal as string
      process.env.TRACEPARENT = env
      process.env.TRACESTATE = 'rojo=1'
      try {
        const byEnv = await handoff()
        assert.equal(byEnv.code, 0, byEnv.stderr)
        assert.deepEqual(await read(byEnv), { traceparent: env, tracestate: 'rojo=1' })
        // The flag wins over the environment; a flag that is not a traceparent is a usage error.
        assert.equal((await read(await handoff('--traceparent', flag))).traceparent, flag)
        const bad = await handoff('--traceparent', 'not-a-trace')
        assert.equal(bad.code, 64)
        assert.match(bad.stderr, /traceparent/)
        // A signed command sends it too, through the identity's signed requests.
        const sent = await baton([
          'message',
          'send',
          '--hub',
          hub.url,
          '--identity',
          identity,
          '--recipient',
          me,
          '--body',
          '{"n":1}',
          '--idempotency-key',
          'cli-trace-1',
          '--json',
        ])
        assert.equal(sent.code, 0, sent.stderr)
        // The seed's signing client too.
        const file = path.join(dir, 'message.json')
        writeFileSync(
          file,
          JSON.stringify({ recipient: me, body: { n: 2 }, idempotencyKey: 'cli-trace-2' }),
        )
        const raw = await baton([
          'request',
          `${hub.url}/.well-known/agent-net`,
          identity,
          'POST',
          '/v1/messages',
          file,
        ])
        assert.equal(raw.code, 0, raw.stderr)
      } finally {
        delete process.env.TRACEPARENT
        delete process.env.TRACESTATE
      }
      const inbox = await baton([
        'message',
        'list',
        '--hub',
        hub.url,
        '--identity',
        identity,
        '--json',
      ])
      const messages = (
        JSON.parse(inbox.stdout) as { messages: { traceparent?: string; tracestate?: string }[] }
      ).messages.slice(-2)
      assert.deepEqual(
        messages.map((m) => [m.traceparent, m.tracestate]),
        [
          [env, 'rojo=1'],
          [env, 'rojo=1'],
        ],
      )
    })

    test('capabilities delete and grant revoke are one command: the same answer from the hub', async () => {
      const signed = ['gr_nope', '--hub', hub.url, '--identity', identity, '--json']
      const now = await baton(['grant', 'revoke', ...signed])
      const old = await baton(['capabilities', 'delete', ...signed])
      assert.equal(now.code, 1, 'a refusal from the hub, not a usage error')
      assert.equal(old.code, now.code)
      assert.equal(JSON.parse(old.stdout).code, JSON.parse(now.stdout).code)
    })

    test('operator commands under admin, and the admin token checked by the hub', async () => {
      const list = await baton([
        'admin',
        'principal',
        'list',
        '--hub',
        hub.url,
        '--admin-token',
        ADMIN,
        '--json',
      ])
      assert.equal(list.code, 0, list.stderr)
      assert.ok(Array.isArray(JSON.parse(list.stdout).principals))
      const wrong = await baton([
        'admin',
        'principals',
        'list',
        '--hub',
        hub.url,
        '--admin-token',
        'x'.repeat(40),
        '--json',
      ])
      assert.equal(wrong.code, 1)
      assert.equal(JSON.parse(wrong.stdout).code, 'admin_token_invalid')
      const missing = await baton([
        'admin',
        'transfer',
        'status',
        'tr_nope',
        '--hub',
        hub.url,
        '--admin-token',
        ADMIN,
        '--json',
      ])
      assert.equal(missing.code, 1)
      assert.equal(JSON.parse(missing.stdout).code, 'transfer_not_found')
    })
  })
}

test('the built command index that `baton --help` reads is the registry’s command tree', () => {
  // The build writes it (npm test builds first); a stale index would hide or invent commands.
  const built = JSON.parse(
    readFileSync(path.join(repoRoot, 'packages/hub/dist/cli/commands.json'), 'utf8'),
  ) as unknown
  assert.deepEqual(built, indexOf(commandTree()))
})

test('hand-written commands take --json too and print one compact JSON value', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-json-'))
  try {
    const file = path.join(dir, 'agent.identity.json')
    await saveIdentity(file, createIdentity('http://127.0.0.1:9/.well-known/agent-net'))
    const out: string[] = []
    const io: Io = { stdout: (s) => out.push(s), stderr: () => {} }
    assert.equal(await main(['identity', 'show', file, '--json'], io), 0)
    assert.equal(out.length, 1)
    assert.doesNotMatch(out[0]!.trim(), /\n/)
    assert.match((JSON.parse(out[0]!) as { principal: string }).principal, /^did:key:z6Mk/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
