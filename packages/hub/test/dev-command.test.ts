// `baton dev`: one command for a first look at a hub and its dashboard.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { SignedClient } from '@baton/client'
import { batonBin, exited, repoRoot, signedAgent } from './support.js'

describe('baton dev', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'baton-dev-'))
  let child: ReturnType<typeof spawn>
  let out = ''
  const field = (label: string) => new RegExp(`^\\s+${label}\\s+(\\S+)`, 'm').exec(out)?.[1]

  before(async () => {
    child = spawn(process.execPath, [batonBin, 'dev', '--port', '0', '--data-dir', dataDir], {
      cwd: repoRoot,
      env: { ...process.env, BATON_HOST: '127.0.0.1', DATABASE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk) => {
        out += chunk
        if (/^\s+data\s/m.test(out)) resolve()
      })
      child.once('exit', (code) => reject(new Error(`baton dev exited ${code}: ${out}`)))
    })
  })
  after(async () => {
    child.kill('SIGTERM')
    await exited(child)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('prints the dashboard link, the admin token, both MCP transports and the data folder', () => {
    const link = field('dashboard')!
    const token = field('admin token')!
    assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/dashboard\/dev-signin\/[A-Za-z0-9_-]{32}$/)
    assert.ok(token.length >= 32)
    assert.equal(link.includes(token), false, 'the admin token is never in the link')
    const hub = new URL(link).origin
    assert.equal(field('MCP \\(HTTP\\)'), `${hub}/mcp`)
    assert.match(out, new RegExp(`baton mcp --hub ${hub}`))
    assert.equal(field('data'), dataDir)
    assert.ok(existsSync(path.join(dataDir, 'baton.sqlite')))
  })

  test('the link signs a browser in once; the session opens the dashboard API', async () => {
    const link = field('dashboard')!
    const hub = new URL(link).origin
    const first = await fetch(link, { redirect: 'manual' })
    assert.equal(first.status, 303)
    const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0]!
    assert.match(cookie, /^baton_session=v1\./)
    const session = await fetch(`${hub}/dashboard/api/session`, { headers: { cookie } })
    assert.equal(session.status, 200)
    assert.equal(((await session.json()) as { admission: string }).admission, 'open')

    const again = await fetch(link, { redirect: 'manual' })
    assert.equal(again.status, 303)
    assert.equal(again.headers.get('set-cookie'), null)
    // The sign-in page it lands on says the link was used, instead of nothing.
    assert.equal(again.headers.get('location'), '/dashboard/?link=used')
    const landing = await (await fetch(`${hub}/dashboard/?link=used`)).text()
    assert.match(landing, /This sign-in link was already used; sign in with the operator token\./)
    const forged = await fetch(`${hub}/dashboard/dev-signin/${'A'.repeat(32)}`, {
      redirect: 'manual',
    })
    assert.equal(forged.headers.get('set-cookie'), null)
    assert.equal(forged.headers.get('location'), '/dashboard/?link=invalid')
  })

  test('admission is open: a new agent is approved at once', async () => {
    const hub = new URL(field('dashboard')!).origin
    const agent = await signedAgent({ url: hub })
    const me = await agent.request('GET', '/v1/me')
    assert.equal(me.status, 200)
    assert.equal((me.body as { state: string }).state, 'approved')

    const admin = await fetch(`${hub}/admin/v1/principals`, {
      headers: { authorization: `Bearer ${field('admin token')}` },
    })
    assert.equal(admin.status, 200)
  })
})

describe('baton dev beside a hub on ./data', () => {
  const folder = mkdtempSync(path.join(tmpdir(), 'baton-dev-folder-'))
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_HOST: '127.0.0.1', BATON_PORT: '0' }
  env.DATABASE_URL = ''
  delete env.BATON_DATA_DIR
  let dev: ReturnType<typeof spawn>
  let serve: ReturnType<typeof spawn>
  let out = ''
  let devUrl = ''
  let serveUrl = ''

  before(async () => {
    dev = spawn(process.execPath, [batonBin, 'dev', '--port', '0'], {
      cwd: folder,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    await new Promise<void>((resolve, reject) => {
      dev.stdout!.on('data', (chunk) => {
        out += chunk
        if (/^\s+data\s/m.test(out)) resolve()
      })
      dev.once('exit', (code) => reject(new Error(`baton dev exited ${code}: ${out}`)))
    })
    devUrl = /^\s+discovery\s+(http:\/\/[^/]+)/m.exec(out)![1]!
    serve = spawn(process.execPath, [batonBin, 'serve'], {
      cwd: folder,
      env: { ...env, BATON_ADMISSION: 'approval' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    serveUrl = await new Promise<string>((resolve, reject) => {
      let log = ''
      serve.stdout!.on('data', (chunk) => {
        log += chunk
        const m = /"url":"(http:\/\/[^"]+)".*"msg":"hub listening"/.exec(log)
        if (m) resolve(m[1]!)
      })
      serve.once('exit', (code) => reject(new Error(`baton serve exited ${code}: ${log}`)))
    })
  })
  after(async () => {
    dev.kill('SIGTERM')
    serve.kill('SIGTERM')
    await Promise.all([exited(dev), exited(serve)])
    rmSync(folder, { recursive: true, force: true })
  })

  test('they share nothing, and dev removes its own data when it stops', async () => {
    const devData = /^\s+data\s+(\S+)/m.exec(out)![1]!
    assert.match(out, /throwaway/)
    assert.equal(devData.startsWith(folder), false, 'dev keeps its data outside the folder')
    assert.ok(existsSync(path.join(devData, 'baton.sqlite')))

    // A handoff made on the hub on ./data is not on the dev hub.
    const made = await fetch(`${serveUrl}/services/v1/handoff`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payload: { task: 'under serve' } }),
    })
    assert.equal(made.status, 201)
    const { handoff_id, owner_token } = (await made.json()) as Record<string, string>
    const onDev = await fetch(`${devUrl}/services/v1/handoff/${handoff_id}`, {
      headers: { authorization: `Bearer ${owner_token}` },
    })
    assert.equal(onDev.status, 404)

    // A key approved by dev's open admission is not approved on the hub on ./data.
    const agent = await signedAgent({ url: devUrl })
    const me = await agent.request<{ state: string }>('GET', '/v1/me')
    assert.equal(me.body.state, 'approved')
    const same = await SignedClient.connect(`${serveUrl}/.well-known/agent-net`, agent.identity, {
      maxRetryWaitMs: 0,
    })
    const there = await same.request<{ state?: string; code?: string }>('GET', '/v1/me')
    assert.ok(
      there.body.state === 'pending' || there.body.code === 'admission_pending',
      JSON.stringify(there.body),
    )

    dev.kill('SIGTERM')
    assert.equal(await exited(dev), 0)
    assert.equal(existsSync(devData), false, 'the throwaway data directory is removed')
    assert.ok(existsSync(path.join(folder, 'data', 'baton.sqlite')), './data holds the serve hub')
  })
})
