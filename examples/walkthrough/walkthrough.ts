// The seed 000 walkthrough, run as written: two consenting agents (owner and peer) in their own
// directories, every command a fresh `baton request` process with the seed's JSON files (only
// the placeholders filled in), the hub restarted between phases, a third identity checking
// isolation, then revocation and the reconciliation lookups.
import { execFile } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const here = import.meta.dirname
const repoRoot = path.resolve(here, '../..')
const baton = path.join(repoRoot, 'packages/hub/bin/baton.mjs')

/** What one step saw: the command, the HTTP status and the parsed body. */
export interface Step {
  who: string
  command: string
  status: number
  body: Record<string, unknown>
}

/** How the walkthrough reaches and steers the hub. */
export interface WalkthroughOptions {
  discoveryUrl: string
  /** A working directory holding one private directory per agent. */
  workDir: string
  /** Stops and starts the hub on the same data (the seed's "restart and return"). */
  restart(): Promise<void>
  /** Approves a pending principal as the operator would. */
  approve(principal: string): Promise<void>
  log?: (line: string) => void
}

type Agent = 'owner' | 'peer' | 'third'

/** Runs the walkthrough and answers every step, failing at the first unexpected answer. */
export async function runWalkthrough(opts: WalkthroughOptions): Promise<Step[]> {
  const log = opts.log ?? (() => {})
  const steps: Step[] = []
  const dirs = Object.fromEntries(
    (['owner', 'peer', 'third'] as const).map((a) => [a, path.join(opts.workDir, a)]),
  ) as Record<Agent, string>
  const values: Record<string, string> = { RUN_ID: `run-${Date.now().toString(36)}` }

  const fill = (text: string) =>
    text.replace(
      /RUN_ID|OWNER_PRINCIPAL|PEER_PRINCIPAL|TASK_ID|GRANT_ID|NOTICE_MESSAGE_ID|REPLY_MESSAGE_ID|EXPIRES_AT/g,
      (name) => {
        const v = values[name]
        if (v === undefined) throw new Error(`placeholder ${name} is not resolved yet`)
        return v
      },
    )

  /** Copies one of the seed's JSON files into an agent's directory with placeholders filled. */
  async function prepare(who: Agent, file: string): Promise<string> {
    const text = fill(await readFile(path.join(here, 'files', file), 'utf8'))
    JSON.parse(text)
    const out = path.join(dirs[who], file)
    await writeFile(out, text)
    return file
  }

  async function request(who: Agent, method: string, p: string, file?: string, expect?: number) {
    const target = fill(p)
    const args = [baton, 'request', opts.discoveryUrl, 'agent.identity.json', method, target]
    if (file) args.push(file)
    const command = `baton request <discovery> agent.identity.json ${method} ${target}${file ? ` ${file}` : ''}`
    let stdout = ''
    let stderr = ''
    try {
      ;({ stdout, stderr } = await run(process.execPath, args, { cwd: dirs[who] }))
    } catch (e) {
      ;({ stdout, stderr } = e as { stdout: string; stderr: string })
    }
    const status = Number(/\b([1-5]\d\d)\b/.exec(stderr)?.[1] ?? 0)
    const body = stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : {}
    steps.push({ who, command, status, body })
    log(`${who.padEnd(5)} ${String(status).padEnd(3)} ${command}`)
    if (expect !== undefined && status !== expect) {
      throw new Error(
        `${who}: ${command} answered ${status}, expected ${expect}: ${stdout}${stderr}`,
      )
    }
    return { status, body }
  }

  const must = (ok: boolean, what: string) => {
    if (!ok) throw new Error(`walkthrough check failed: ${what}`)
    log(`      ok  ${what}`)
  }

  // Identities: each agent makes its own key once; the operator admits the two participants
  // and the third identity that consents to the boundary test.
  for (const who of ['owner', 'peer', 'third'] as const) {
    await mkdir(dirs[who], { recursive: true })
    await run(
      process.execPath,
      [baton, 'identity', 'init', '--hub', opts.discoveryUrl, '--out', 'agent.identity.json'],
      { cwd: dirs[who] },
    )
    const me = await request(who, 'GET', '/v1/me')
    const principal = String(me.body.principal)
    if (me.body.state !== 'approved') await opts.approve(principal)
    const again = await request(who, 'GET', '/v1/me', undefined, 200)
    must(again.body.state === 'approved', `${who} is admitted as ${principal}`)
    if (who === 'owner') values.OWNER_PRINCIPAL = principal
    if (who === 'peer') values.PEER_PRINCIPAL = principal
  }

  // Owner: create the task once and share only that task.
  const task = await request(
    'owner',
    'POST',
    '/v1/resources',
    await prepare('owner', 'handoff-task.json'),
    201,
  )
  must(task.body.version === 1, 'the task returns version 1')
  values.TASK_ID = String(task.body.id)
  values.EXPIRES_AT = new Date(Date.now() + 3600_000).toISOString()
  const grant = await request(
    'owner',
    'POST',
    '/v1/capabilities',
    await prepare('owner', 'handoff-grant.json'),
    201,
  )
  values.GRANT_ID = String(grant.body.id)
  must(grant.body.delegable === false, 'the grant is not delegable')

  // Owner: checkpoint the prepared notice, then send it; a lost answer is retried identically.
  const notice = await prepare('owner', 'handoff-notice.json')
  const ownerCp = await request(
    'owner',
    'PUT',
    '/v1/home/file',
    await prepare('owner', 'handoff-owner-checkpoint.json'),
    200,
  )
  must(ownerCp.body.revision === 1, 'the owner checkpoint is at revision 1')
  const sent = await request('owner', 'POST', '/v1/messages', notice)
  must(sent.status === 200 || sent.status === 201, 'the notice is accepted')
  values.NOTICE_MESSAGE_ID = String(sent.body.id)
  const resent = await request('owner', 'POST', '/v1/messages', notice)
  must(
    resent.body.id === sent.body.id,
    'a repeated send with the same key returns the same message id',
  )

  await opts.restart()
  log('      --  hub restarted')

  // Peer: read the notice and the exact task, then prepare and write the result.
  const inbox = await request('peer', 'GET', '/v1/messages?after=0&limit=20', undefined, 200)
  const messages = inbox.body.messages as {
    id: string
    sender: string
    body: Record<string, unknown>
  }[]
  const got = messages.find((m) => m.id === values.NOTICE_MESSAGE_ID)
  must(
    got !== undefined &&
      got.sender === values.OWNER_PRINCIPAL &&
      got.body.taskId === values.TASK_ID &&
      got.body.taskVersion === 1,
    'the peer finds the notice from the owner naming the task at version 1',
  )
  const seen = await request('peer', 'GET', '/v1/resources/TASK_ID', undefined, 200)
  must(
    seen.body.owner === values.OWNER_PRINCIPAL && seen.body.version === 1,
    'the peer reads the task at version 1',
  )
  await request(
    'peer',
    'PUT',
    '/v1/home/file',
    await prepare('peer', 'handoff-peer-checkpoint.json'),
    200,
  )
  const result = await prepare('peer', 'handoff-result.json')
  const patched = await request('peer', 'PATCH', '/v1/resources/TASK_ID', result, 200)
  must(patched.body.version === 2, 'the result PATCH returns version 2')
  const reply = await request(
    'peer',
    'POST',
    '/v1/messages',
    await prepare('peer', 'handoff-reply.json'),
  )
  must(reply.status === 200 || reply.status === 201, 'the reply is accepted')
  values.REPLY_MESSAGE_ID = String(reply.body.id)
  const peerDone = await request(
    'peer',
    'PUT',
    '/v1/home/file',
    await prepare('peer', 'handoff-peer-complete.json'),
  )
  must(peerDone.body.revision === 2, 'the peer checkpoint moves to revision 2')
  await request('peer', 'POST', '/v1/messages/NOTICE_MESSAGE_ID/ack', undefined, 200)

  // Owner: verify the result and retain the receipt.
  const ownerInbox = await request('owner', 'GET', '/v1/messages?after=0&limit=20', undefined, 200)
  const replyMsg = (
    ownerInbox.body.messages as { id: string; body: Record<string, unknown> }[]
  ).find((m) => m.id === values.REPLY_MESSAGE_ID)
  must(replyMsg?.body.taskVersion === 2, 'the owner finds the reply naming version 2')
  const final = await request('owner', 'GET', '/v1/resources/TASK_ID', undefined, 200)
  must(
    final.body.version === 2 && (final.body.data as { status: string }).status === 'completed',
    'the task is completed at version 2',
  )
  const history = await request('owner', 'GET', '/v1/resources/TASK_ID/history', undefined, 200)
  const versions = history.body.versions as { version: number; data: { status: string } }[]
  must(
    versions.length === 2 && versions[0]?.data.status === 'open',
    'history preserves the original version 1',
  )
  await request(
    'owner',
    'PUT',
    '/v1/home/file',
    await prepare('owner', 'handoff-owner-complete.json'),
    200,
  )
  await request('owner', 'POST', '/v1/messages/REPLY_MESSAGE_ID/ack', undefined, 200)

  await opts.restart()
  log('      --  hub restarted')

  // Restart and return with the same saved identities.
  for (const [who, principal, cp] of [
    ['owner', values.OWNER_PRINCIPAL, 'owner'],
    ['peer', values.PEER_PRINCIPAL, 'peer'],
  ] as const) {
    const me = await request(who, 'GET', '/v1/me', undefined, 200)
    must(me.body.principal === principal, `${who} returns as the same principal`)
    const file = await request(
      who,
      'GET',
      `/v1/home/file?path=handoff%2FRUN_ID%2F${cp}.json`,
      undefined,
      200,
    )
    const content = JSON.parse(String(file.body.content)) as { taskId: string; taskVersion: number }
    must(
      content.taskId === values.TASK_ID && content.taskVersion === 2,
      `${who} checkpoint names the task at version 2`,
    )
    const r = await request(who, 'GET', '/v1/resources/TASK_ID', undefined, 200)
    must(r.body.version === 2, `${who} observes version 2`)
  }
  await request('owner', 'GET', '/v1/resources/TASK_ID/history', undefined, 200)

  // Isolation: a third, consenting identity sees nothing of the task or the owner's home.
  await request('third', 'GET', '/v1/resources/TASK_ID', undefined, 403)
  await request('third', 'GET', '/v1/resources/TASK_ID/history', undefined, 403)
  const thirdList = await request(
    'third',
    'GET',
    `/v1/resources?namespace=handoff-${values.OWNER_PRINCIPAL}-RUN_ID&kind=net-task-handoff%2Fv1`,
    undefined,
    200,
  )
  must(
    (thirdList.body.resources as unknown[]).length === 0,
    'a namespace listing by the third identity omits the task',
  )
  await request('peer', 'GET', '/v1/home/file?path=handoff%2FRUN_ID%2Fowner.json', undefined, 404)

  // Revocation: the owner revokes the exact grant; the peer's reads and PATCH are then 403.
  const revoked = await request('owner', 'DELETE', '/v1/capabilities/GRANT_ID', undefined, 200)
  must(typeof revoked.body.revokedAt === 'string', 'the grant has revokedAt')
  await request('peer', 'GET', '/v1/resources/TASK_ID', undefined, 403)
  await request('peer', 'GET', '/v1/resources/TASK_ID/history', undefined, 403)
  await request('peer', 'PATCH', '/v1/resources/TASK_ID', 'handoff-result.json', 403)

  // Reconciliation lookups, each by the relevant owner or peer.
  const lookup = await request(
    'owner',
    'GET',
    '/v1/resources?namespace=handoff-OWNER_PRINCIPAL-RUN_ID&kind=net-task-handoff%2Fv1',
    undefined,
    200,
  )
  must(
    (lookup.body.resources as { id: string }[]).map((r) => r.id).join() === values.TASK_ID,
    'the namespace lookup finds exactly the task',
  )
  const caps = await request('owner', 'GET', '/v1/capabilities', undefined, 200)
  const g = (caps.body.capabilities as { id: string; revokedAt: string | null }[]).find(
    (c) => c.id === values.GRANT_ID,
  )
  must(typeof g?.revokedAt === 'string', 'GET /v1/capabilities shows the grant revoked')
  await request('owner', 'GET', '/v1/home/file?path=handoff%2FRUN_ID%2Fowner.json', undefined, 200)
  await request('peer', 'GET', '/v1/home/file?path=handoff%2FRUN_ID%2Fpeer.json', undefined, 200)
  return steps
}
