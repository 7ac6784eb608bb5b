import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { A2A_RELAY_EXTENSION_URI, ERRORS } from '@baton/protocol'
import fc from 'fast-check'
import { JSON_EXPR_V1_OPERATORS } from '../src/compute/json-expr.js'
import { assertAnswered, FUZZ_LIMITS, hostileBody, hostileParam, storedState } from './hostile.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

// Every signed route, with correctly signed requests carrying random bodies, ids and queries:
// whatever the input, the answer is never a 5xx, and every refusal carries a registered code.
const ROUTES: [string, string][] = [
  ['GET', '/v1/me'],
  ['POST', '/v1/resources'],
  ['GET', '/v1/resources?namespace=%s&kind=%s&limit=%s&after=%s'],
  ['GET', '/v1/resources/%s'],
  ['PATCH', '/v1/resources/%s'],
  ['GET', '/v1/resources/%s/history'],
  ['GET', '/v1/capabilities'],
  ['POST', '/v1/capabilities'],
  ['DELETE', '/v1/capabilities/%s'],
  ['POST', '/v1/messages'],
  ['GET', '/v1/messages?after=%s&limit=%s&unacked=%s&wait=0'],
  ['POST', '/v1/messages/%s/ack'],
  ['PUT', '/v1/home/file'],
  ['GET', '/v1/home/file?path=%s'],
  ['GET', '/v1/home/files?prefix=%s&limit=%s'],
  ['DELETE', '/v1/home/file?path=%s&expectedRevision=%s'],
  ['POST', '/v1/transfers'],
  ['GET', '/v1/transfers?role=%s&state=%s'],
  ['POST', '/v1/transfers/claim'],
  ['GET', '/v1/transfers/%s'],
  ['GET', '/v1/transfers/%s/wait?seconds=%s&version=%s'],
  ['GET', '/v1/transfers/%s/snapshot'],
  ['POST', '/v1/transfers/%s/provision'],
  ['POST', '/v1/transfers/%s/claim'],
  ['POST', '/v1/transfers/%s/push'],
  ['POST', '/v1/transfers/%s/activate'],
  ['POST', '/v1/transfers/%s/lease'],
  ['POST', '/v1/transfers/%s/usage'],
  ['POST', '/v1/compute/jobs'],
  ['GET', '/v1/compute/jobs?state=%s&limit=%s'],
  ['GET', '/v1/compute/jobs/%s'],
  ['GET', '/v1/compute/jobs/%s/wait/%s?version=%s'],
  ['POST', '/v1/compute/jobs/%s/cancel'],
]

const value = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('0', '1', '-1', '100', '1e3', 'true', '..', 'a/b', 'rs_x', '%00', ''),
)
const field = fc.constantFrom(
  'namespace',
  'kind',
  'data',
  'expectedVersion',
  'resourceId',
  'subject',
  'actions',
  'delegable',
  'expiresAt',
  'recipient',
  'body',
  'idempotencyKey',
  'path',
  'expectedRevision',
  'content',
  'snapshot',
  'tier',
  'token',
  'checksum',
  'amountMicros',
  'seconds',
  'language',
  'program',
  'input',
  'inputResourceId',
  'output',
  'extra',
)
// json-expr-v1 programs: operator calls nested in each other, with wrong arities and types too.
const program = fc.letrec<{ expr: unknown }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 1 }),
    fc
      .tuple(
        fc.constantFrom(
          'var',
          '+',
          '==',
          'in',
          'cat',
          'merge',
          'if',
          'map',
          'reduce',
          'substr',
          'x',
        ),
        fc.array(tie('expr'), { maxLength: 3 }),
      )
      .map(([op, args]) => ({ [op]: args })),
  ),
})).expr
const body = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(field, fc.oneof(fc.jsonValue({ maxDepth: 2 }), value), { maxKeys: 6 }),
  fc.record(
    {
      language: fc.constantFrom('json-expr-v1', 'x', ''),
      program,
      input: fc.jsonValue({ maxDepth: 2 }),
      idempotencyKey: fc.string({ minLength: 0, maxLength: 20 }),
    },
    { requiredKeys: ['program'] },
  ),
)

// The A2A 1.0 JSON-RPC binding: every method the hub serves (but the streaming ones, which
// hold their answer open) and some it does not, with random params and versions.
const a2aMethod = fc.constantFrom(
  'SendMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'message/send',
  'NoSuchMethod',
)
const a2aField = fc.constantFrom(
  'id',
  'taskId',
  'contextId',
  'tenant',
  'message',
  'historyLength',
  'currentGeneration',
  'pageSize',
  'pageToken',
  'status',
  'url',
  'token',
  'metadata',
)
const a2aMessage = fc.record(
  {
    messageId: fc.string({ maxLength: 12 }),
    role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT', 'user', 'x'),
    parts: fc.array(
      fc.oneof(
        fc.record({ text: fc.string({ maxLength: 30 }) }),
        fc.record({ data: fc.jsonValue({ maxDepth: 2 }) }),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      { maxLength: 3 },
    ),
    taskId: value,
    metadata: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), {
      maxKeys: 3,
    }),
  },
  { requiredKeys: [] },
)
const a2aParams = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.dictionary(a2aField, fc.oneof(value, fc.jsonValue({ maxDepth: 2 })), { maxKeys: 5 }),
  fc.record({ message: a2aMessage, tenant: fc.oneof(value, fc.constant('did:key:z6Mkx')) }),
)
/** The JSON-RPC error codes of JSON-RPC 2.0 and of A2A 1.0's binding, but internal (-32603). */
const A2A_CODES = new Set([
  -32700, -32600, -32601, -32602, -32000, -32001, -32002, -32003, -32004, -32005, -32006, -32007,
  -32008, -32009, -32010,
])

for (const store of testStores) {
  describe(`fuzzing the signed routes (${store.name})`, () => {
    let hub: TestHub
    let agent: SignedClient
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
        BATON_QUOTA_REQUESTS_PER_DAY: '1000000',
        ...FUZZ_LIMITS,
      })
      agent = await signedAgent(hub)
    })
    after(() => hub.close())

    test('no signed request makes a 5xx; every refusal has a registered code', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...ROUTES),
          fc.array(value, { minLength: 4, maxLength: 4 }),
          fc.option(body),
          async ([method, template], params, payload) => {
            let i = 0
            const path = template.replace(/%s/g, () => encodeURIComponent(params[i++] ?? ''))
            const res = await agent.request(
              method,
              path,
              payload === null || method === 'GET' || method === 'DELETE'
                ? undefined
                : (payload as object),
            )
            // A test hub runs no compute runtime, so a valid submit is the documented 503.
            const unserved = (res.body as { code?: string })?.code === 'compute_unavailable'
            assert.ok(
              res.status < 500 || unserved,
              `${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`,
            )
            if (res.status >= 400) {
              const code = (res.body as { code?: string })?.code
              assert.ok(
                Object.hasOwn(ERRORS, String(code)),
                `${method} ${path}: ${JSON.stringify(res.body)}`,
              )
            }
          },
        ),
        { numRuns: 300 },
      )
    })

    test('no signed A2A JSON-RPC call makes a 5xx or an internal error; every error is registered', async () => {
      await fc.assert(
        fc.asyncProperty(
          a2aMethod,
          fc.option(a2aParams),
          fc.constantFrom('1.0', '1.0.3', '0.3', '', '2.0', 'x'),
          fc.oneof(fc.constant<unknown>(1), fc.string({ maxLength: 6 }), fc.constant(null)),
          async (method, params, version, id) => {
            const rpc = { jsonrpc: '2.0', id, method, ...(params === null ? {} : { params }) }
            const res = await agent.request<{
              error?: { code: unknown; data?: { code?: unknown } }
            }>('POST', '/v1/a2a', rpc, version === '' ? {} : { 'a2a-version': version })
            const what = `${method} ${JSON.stringify(params)} (A2A-Version ${version})`
            assert.ok(res.status < 500, `${what} -> ${res.status} ${JSON.stringify(res.body)}`)
            const error = res.body?.error
            if (error) {
              assert.ok(A2A_CODES.has(error.code as number), `${what}: ${JSON.stringify(error)}`)
              const code = error.data?.code
              if (code !== undefined) {
                assert.ok(Object.hasOwn(ERRORS, String(code)), `${what}: ${JSON.stringify(error)}`)
              }
            }
          },
        ),
        { numRuns: 300 },
      )
    })

    const fill = (template: string, param: string) => template.replace(/%s/g, () => param)
    const withBody = ROUTES.filter(([method]) => method !== 'GET' && method !== 'DELETE')

    test('hostile bodies on every signed route are refused and change nothing', async () => {
      // Something of each kind to change, so a wrongly accepted body would show in the state.
      const resource = await agent.request<{ id: string }>('POST', '/v1/resources', {
        namespace: 'fuzz',
        kind: 'k',
        data: { v: 1 },
      })
      assert.equal(resource.status, 201)
      const before = await storedState(hub)
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...withBody),
          hostileBody,
          fc.constantFrom(resource.body.id, 'tr_x', 'm_1', 'x'),
          async ([method, template], body, param) => {
            const path = fill(template, encodeURIComponent(param))
            const res = await agent.request(method, path, body.bytes)
            const what = `${method} ${path} (${body.kind})`
            assertAnswered(what, res.status, res.body)
            assert.ok(res.status >= 400, `${what} was accepted: ${JSON.stringify(res.body)}`)
          },
        ),
        { numRuns: 200 },
      )
      assert.deepEqual(await storedState(hub), before)
    })

    test('hostile path and query parameters on every signed route never make a 5xx', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...ROUTES),
          hostileParam,
          async ([method, template], param) => {
            const path = fill(template, param)
            const body = method === 'GET' || method === 'DELETE' ? undefined : {}
            const res = await agent.request(method, path, body)
            assertAnswered(`${method} ${path}`, res.status, res.body)
            if (template.includes('%s') && param.includes('%00')) {
              assert.ok(res.status >= 400, `${method} ${path} accepted a NUL`)
            }
          },
        ),
        { numRuns: 200 },
      )
    })
  })
}

// The A2A relay with real parties: an admitted owner and agent with tasks between them (one with
// artifacts, one ended, one with a push config) and a stranger. Generated sends name the real
// tenant and tasks and carry relay updates (states, artifacts appended and replaced, generation
// matches, push configs), so creation, continuation, every cap and the artifact fold are reached.
const TASK_STATE = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'TASK_STATE_WORKING',
      'TASK_STATE_WORKING',
      'TASK_STATE_WORKING',
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_COMPLETED',
      'TASK_STATE_FAILED',
    ),
  },
  fc.constantFrom('TASK_STATE_UNSPECIFIED', 'working'),
)
const part = fc.oneof(
  fc.record({ text: fc.string({ maxLength: 40 }) }),
  fc.record({ data: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ text: fc.constant('x'.repeat(900)) }),
)
const relayArtifact = fc.record(
  {
    artifact: fc.record(
      {
        artifactId: fc.oneof(
          { weight: 9, arbitrary: fc.constantFrom('a0', 'a1', 'a2', 'a3', 'a4', 'a5') },
          value,
        ),
        parts: fc.array(part, { minLength: 1, maxLength: 3 }),
        name: fc.string({ maxLength: 10 }),
      },
      { requiredKeys: ['artifactId', 'parts'] },
    ),
    append: fc.boolean(),
    lastChunk: fc.boolean(),
  },
  { requiredKeys: ['artifact'] },
)
const relayUpdate = fc.record(
  {
    state: TASK_STATE,
    artifacts: fc.array(relayArtifact, { minLength: 1, maxLength: 4 }),
    ifGenerationMatch: fc.oneof(
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 12 }) },
      { weight: 1, arbitrary: value },
      { weight: 6, arbitrary: fc.constant(undefined) },
    ),
  },
  { requiredKeys: ['artifacts'] },
)

/** A2A error codes: JSON-RPC's and the binding's, never internal (-32603). */
const CAPS = new Set([
  'a2a_task_artifacts_exceeded',
  'a2a_task_events_exceeded',
  'a2a_task_too_large',
  'a2a_task_push_configs_exceeded',
  'a2a_push_configs_exceeded',
  'a2a_push_hosts_exceeded',
  'a2a_message_too_large',
  'storage_quota_exceeded',
])

for (const store of testStores) {
  describe(`fuzzing the A2A relay with real tasks (${store.name})`, () => {
    let hub: TestHub
    const parties: Record<'owner' | 'agent' | 'stranger', SignedClient> = {} as never
    const tasks: string[] = []
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_QUOTA_REQUESTS_PER_DAY: '1000000',
        BATON_QUOTA_MESSAGES_PER_DAY: '1000000',
        BATON_NOTIFY_ALLOW_LOOPBACK: 'true',
        // An owner's send answers at once instead of waiting for the task to settle.
        BATON_MESSAGE_MAX_WAIT_SECONDS: '0',
        BATON_A2A_PUSH_CONFIGS_PER_TASK: '2',
        BATON_A2A_PUSH_CONFIGS_PER_PRINCIPAL: '4',
        BATON_A2A_PUSH_HOSTS_PER_PRINCIPAL: '2',
        BATON_A2A_ARTIFACTS_PER_TASK: '4',
        BATON_A2A_EVENTS_PER_TASK: '40',
        BATON_A2A_TASK_MAX_BYTES: '16384',
        BATON_A2A_LIST_PAGE_MAX_BYTES: '4096',
        BATON_MESSAGE_MAX_BYTES: '4096',
        ...FUZZ_LIMITS,
      })
      for (const who of ['owner', 'agent', 'stranger'] as const) {
        parties[who] = await signedAgent(hub)
      }
      const a2a = hub.ctx.a2a
      const { owner, agent } = { owner: parties.owner.principal, agent: parties.agent.principal }
      for (let i = 0; i < 3; i++) {
        const { task } = await a2a.send(owner, {
          tenant: agent,
          message: { messageId: `seed-${i}`, role: 'ROLE_USER', parts: [{ text: 'go' }] },
          configuration: { returnImmediately: true },
        })
        tasks.push(task.id)
      }
      await a2a.send(agent, {
        message: {
          messageId: 'seed-art',
          role: 'ROLE_AGENT',
          parts: [{ text: 'w' }],
          taskId: tasks[0]!,
        },
        metadata: {
          [A2A_RELAY_EXTENSION_URI]: {
            state: 'TASK_STATE_WORKING',
            artifacts: [{ artifact: { artifactId: 'a0', parts: [{ text: 'seed' }] } }],
          },
        },
      })
      await a2a.setPushConfig(owner, { taskId: tasks[1]!, url: 'http://127.0.0.1:9/seed' })
      await a2a.cancel(owner, { id: tasks[2]! })
    })
    after(() => hub.close())

    test('no A2A call with real parties and tasks makes a 5xx or an internal error', async () => {
      // A real task is named by its place among the newest ones (the seeded ones first, then
      // those the run creates), resolved when the call is made, so calls keep finding tasks that
      // have not ended.
      const taskRef = fc.oneof(
        { weight: 8, arbitrary: fc.nat({ max: 99 }).map((n) => `@task:${n}`) },
        { weight: 1, arbitrary: fc.constantFrom('task_missing', '') },
      )
      const live = [...tasks]
      const resolve = (params: unknown) =>
        JSON.parse(
          JSON.stringify(params).replace(
            /@task:(\d+)/g,
            (_, n: string) => live[live.length - 1 - (Number(n) % Math.min(live.length, 4))]!,
          ),
        ) as Record<string, unknown>
      const tenant = fc.oneof(
        { weight: 5, arbitrary: fc.constant(parties.agent.principal) },
        fc.constant(parties.stranger.principal),
        fc.constant(parties.owner.principal),
        value,
      )
      const push = fc.record(
        {
          url: fc.constantFrom(
            'http://127.0.0.1:9/a',
            'http://127.0.0.2:9/b',
            'http://127.0.0.3:9/c',
            'ftp://x',
            'http://169.254.169.254/',
          ),
          id: fc.constantFrom('p1', 'p2', 'p3'),
          token: fc.constantFrom('t', 'bad token'),
        },
        { requiredKeys: ['url'] },
      )
      const message = (role: fc.Arbitrary<string>, taskId?: fc.Arbitrary<string>) =>
        fc.record(
          {
            messageId: fc.oneof(
              { weight: 1, arbitrary: fc.constantFrom('m1', 'm2') },
              { weight: 8, arbitrary: fc.uuid() },
            ),
            role,
            parts: fc.array(part, { minLength: 1, maxLength: 3 }),
            ...(taskId ? { taskId } : {}),
          },
          { requiredKeys: ['messageId', 'role', 'parts', ...(taskId ? ['taskId' as const] : [])] },
        )
      const configuration = fc.record(
        {
          returnImmediately: fc.boolean(),
          historyLength: fc.integer({ min: 0, max: 3 }),
          ifGenerationMatch: fc.oneof(
            { weight: 1, arbitrary: fc.integer({ min: 1, max: 12 }) },
            { weight: 5, arbitrary: fc.constant(undefined) },
          ),
          taskPushNotificationConfig: fc.oneof(
            { weight: 1, arbitrary: push },
            { weight: 3, arbitrary: fc.constant(undefined) },
          ),
        },
        { requiredKeys: [] },
      )
      const send = fc.oneof(
        // a new task, to the admitted agent or to others
        fc.record({ tenant, message: message(fc.constant('ROLE_USER')), configuration }),
        // a real task continued, with the relay's updates
        fc.record(
          {
            message: message(fc.constantFrom('ROLE_USER', 'ROLE_AGENT'), taskRef),
            metadata: fc.record({ [A2A_RELAY_EXTENSION_URI]: relayUpdate }),
            configuration,
          },
          { requiredKeys: ['message', 'metadata'] },
        ),
      )
      const call = fc.oneof(
        { weight: 5, arbitrary: send.map((params) => ['SendMessage', params] as const) },
        fc
          .record(
            { id: taskRef, historyLength: fc.integer({ min: 0, max: 5 }) },
            { requiredKeys: ['id'] },
          )
          .map((p) => ['GetTask', p] as const),
        fc
          .record(
            {
              includeArtifacts: fc.boolean(),
              pageSize: fc.integer({ min: 0, max: 3 }),
              historyLength: fc.integer({ min: 0, max: 2 }),
            },
            { requiredKeys: [] },
          )
          .map((p) => ['ListTasks', p] as const),
        { weight: 1, arbitrary: taskRef.map((id) => ['CancelTask', { id }] as const) },
        fc
          .tuple(taskRef, push)
          .map(([taskId, p]) => ['CreateTaskPushNotificationConfig', { taskId, ...p }] as const),
        fc
          .tuple(taskRef, fc.constantFrom('p1', 'p2', 'x'))
          .map(([taskId, id]) => ['DeleteTaskPushNotificationConfig', { taskId, id }] as const),
        taskRef.map((taskId) => ['ListTaskPushNotificationConfigs', { taskId }] as const),
      )
      const seen = new Map<string, number>()
      const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1)
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('owner', 'agent', 'owner', 'agent', 'agent', 'stranger'),
          call,
          fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, fc.constant(false)),
          async (who, [method, params], roleOfCaller) => {
            // Most sends speak with the caller's own role, so the rules past it are reached.
            const named = resolve(params)
            const message = named.message as Record<string, unknown> | undefined
            const role = who === 'agent' ? 'ROLE_AGENT' : 'ROLE_USER'
            const sent =
              roleOfCaller && message && who !== 'stranger'
                ? { ...named, message: { ...message, role } }
                : named
            const res = await parties[who as keyof typeof parties].request<{
              result?: { task?: { id?: string } }
              error?: { code: unknown; data?: { code?: unknown } }
            }>(
              'POST',
              '/v1/a2a',
              { jsonrpc: '2.0', id: 1, method, params: sent },
              { 'a2a-version': '1.0' },
            )
            const what = `${who} ${method} ${JSON.stringify(sent).slice(0, 400)}`
            assert.ok(res.status < 500, `${what} -> ${res.status} ${JSON.stringify(res.body)}`)
            const error = res.body?.error
            if (error) {
              assert.ok(A2A_CODES.has(error.code as number), `${what}: ${JSON.stringify(error)}`)
              const code = String(error.data?.code)
              assert.notEqual(code, 'internal', what)
              if (error.data?.code !== undefined) {
                assert.ok(Object.hasOwn(ERRORS, code), `${what}: ${JSON.stringify(error)}`)
              }
              count(
                CAPS.has(code)
                  ? 'cap'
                  : `${code} ${String((error.data as { field?: unknown }).field)}`,
              )
            } else {
              // A task that ended leaves the pool, so calls go on finding tasks to continue.
              const result = res.body.result as
                | {
                    id?: string
                    status?: { state?: string }
                    task?: { id?: string; status?: { state?: string } }
                  }
                | undefined
              const task = result?.task ?? result
              const ended = ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'].map(
                (s) => `TASK_STATE_${s}`,
              )
              const at = live.indexOf(String(task?.id))
              if (at >= 0 && live.length > 1 && ended.includes(String(task?.status?.state))) {
                live.splice(at, 1)
              }
            }
            if (!error && method === 'SendMessage') {
              const p = sent as { message: { taskId?: string } }
              count(p.message.taskId === undefined ? 'created' : 'continued')
              const id = res.body.result?.task?.id
              // Only the owner's tasks to the agent join the pool the calls name.
              const between = (sent as { tenant?: string }).tenant === parties.agent.principal
              if (p.message.taskId === undefined && id && who === 'owner' && between) live.push(id)
            }
          },
        ),
        { numRuns: 400 },
      )
      // The paths the relay's rules live on were reached, not only its refusals of shape.
      for (const path of ['created', 'continued', 'cap']) {
        assert.ok((seen.get(path) ?? 0) > 0, `never ${path}: ${JSON.stringify([...seen])}`)
      }
      const folded = await hub.ctx.database.db
        .selectFrom('a2a_artifacts')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
      assert.ok(Number(folded.n) > 1, `${folded.n} folded artifacts: ${JSON.stringify([...seen])}`)
      // Every task still reads back whole, its artifacts folded as their events say.
      for (const id of tasks) {
        const view = await hub.ctx.a2a.get(parties.owner.principal, { id })
        assert.equal(view.id, id)
      }
    })
  })
}

// Compute with its embedded runtime on: generated programs that are valid are queued, claimed
// and run to an end on the worker pool, so the evaluator itself is fuzzed through the hub.
// Well-formed programs: every operator of json-expr-v1 at an arity it takes, over the input's
// variables and literals, so most are accepted and run (and many fail at run time, with codes).
const operators = Object.entries(JSON_EXPR_V1_OPERATORS)
const wellFormed = fc.letrec<{ expr: unknown }>((tie) => ({
  expr: fc.oneof(
    { maxDepth: 4, depthIdentifier: 'expr' },
    fc.integer({ min: -5, max: 50 }),
    fc.string({ maxLength: 6 }),
    fc.boolean(),
    fc.constantFrom({ var: 'a' }, { var: 'b' }, { var: 'xs' }, { var: 's' }, [1, 2, 3]),
    fc
      .constantFrom(...operators)
      .chain(([op, [min, max]]) =>
        fc
          .array(tie('expr'), { minLength: min, maxLength: max < 0 ? min + 2 : max })
          .map((args) => ({ [op]: args })),
      ),
  ),
})).expr
for (const store of testStores) {
  describe(`fuzzing compute jobs on the embedded runtime (${store.name})`, () => {
    let hub: TestHub
    let agent: SignedClient
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_COMPUTE_EMBEDDED: 'true',
        BATON_QUOTA_REQUESTS_PER_DAY: '1000000',
        BATON_QUOTA_COMPUTE_JOBS_PER_DAY: '1000000',
        ...FUZZ_LIMITS,
      })
      agent = await signedAgent(hub)
    })
    after(() => hub.close())

    test('every generated job is refused with a registered code or ends, never internal', async () => {
      const input = fc.dictionary(
        fc.constantFrom('a', 'b', 'xs', 's'),
        fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.array(fc.integer(), { maxLength: 20 })),
        { maxKeys: 4 },
      )
      const ended = new Map<string, number>()
      let n = 0
      await fc.assert(
        fc.asyncProperty(
          fc.oneof({ weight: 3, arbitrary: wellFormed }, program),
          input,
          async (expr, data) => {
            const submitted = await agent.request<{ jobId?: string; code?: string }>(
              'POST',
              '/v1/compute/jobs',
              {
                language: 'json-expr-v1',
                program: expr,
                input: data,
                idempotencyKey: `fuzz-job-${++n}`,
              },
            )
            const what = `${JSON.stringify(expr)} on ${JSON.stringify(data)}`
            assert.ok(submitted.status < 500, `${what} -> ${JSON.stringify(submitted.body)}`)
            if (submitted.status >= 400) {
              const code = String(submitted.body.code)
              assert.ok(Object.hasOwn(ERRORS, code), what)
              ended.set(code, (ended.get(code) ?? 0) + 1)
              return
            }
            for (;;) {
              const job = await agent.request<{
                state: string
                error?: { code?: string }
              }>('GET', `/v1/compute/jobs/${submitted.body.jobId}/wait/5`)
              assert.equal(job.status, 200, what)
              const { state, error } = job.body
              if (state !== 'succeeded' && state !== 'failed' && state !== 'canceled') continue
              if (error) {
                assert.notEqual(error.code, 'internal', `${what}: ${JSON.stringify(error)}`)
                assert.ok(
                  Object.hasOwn(ERRORS, String(error.code)),
                  `${what}: ${JSON.stringify(error)}`,
                )
              }
              ended.set(state, (ended.get(state) ?? 0) + 1)
              return
            }
          },
        ),
        { numRuns: 80 },
      )
      // Valid programs did run on the runtime.
      assert.ok((ended.get('succeeded') ?? 0) > 0, JSON.stringify([...ended]))
    })
  })
}
