// The Python client's own tests (pytest, on Debian's python3) against a real hub on each store,
// beside a TypeScript agent (@baton/client) they ask to make calls: token handoffs, resources,
// grants, messages, home files, hops and compute, the published-contract check, the signed-request
// conformance vectors and the seed 000 walkthrough with two Python agents and this one. Then the
// package is installed from the repository into a fresh virtual environment with pip and no
// index, and a fresh identity does a handoff, a grant and a message with the TypeScript agent.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { BatonClient, CONTRACTS, loadIdentity, type SignedClient } from '@baton/client'
import {
  freePort,
  restartableHub,
  signedAgent,
  testStores,
} from '../../../packages/hub/test/support.js'

const PYTHON = process.env.BATON_PYTHON ?? '/usr/bin/python3'
const here = import.meta.dirname
const pkg = path.resolve(here, '..')

/** A bare environment for Debian's python3: no user site, no bytecode left in the repository. */
function pythonEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: '/usr/bin:/bin',
    LC_ALL: 'C.UTF-8',
    HOME: tmpdir(),
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONNOUSERSITE: '1',
    ...extra,
  }
}

/** Runs a command to its end and answers its exit code and output; never rejects. */
function runProcess(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: Record<string, string> },
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (c) => {
      out += c
    })
    child.stderr.on('data', (c) => {
      out += c
    })
    child.once('error', (error) => resolve({ code: null, out: `${out}${error.message}` }))
    child.once('close', (code) => resolve({ code, out }))
  })
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let text = ''
    req.on('data', (c) => {
      text += c
    })
    req.on('end', () => {
      try {
        resolve(text ? JSON.parse(text) : {})
      } catch (error) {
        reject(error)
      }
    })
  })
}

/**
 * The TypeScript agent, served on loopback for the Python tests: `/call` makes one call by its
 * contract as this identity (or with a handoff token) and answers status and body; `/restart`
 * stops the hub and starts it again on the same data and port.
 */
async function tsAgentServer(
  hub: () => { url: string },
  agent: SignedClient,
  restart: () => Promise<void>,
): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    try {
      const input = await readJson(req)
      let answer: unknown
      if (req.url === '/whoami') answer = { principal: agent.principal }
      else if (req.url === '/load-identity') {
        answer = { principal: (await loadIdentity(String(input.path))).principal }
      } else if (req.url === '/restart') {
        await restart()
        answer = {}
      } else if (req.url === '/call') {
        const contract = CONTRACTS.find((c) => c.name === input.operation)
        if (!contract) throw new Error(`no contract ${String(input.operation)}`)
        const client = new BatonClient(hub().url, { signer: agent })
        const token = typeof input.token === 'string' ? { token: input.token } : {}
        const raw = await client.request(contract, input.input as never, token as never)
        answer = { status: raw.status, body: raw.body }
      } else {
        res.writeHead(404).end()
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer))
    } catch (error) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error))
    }
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, server }
}

/** Debian's python3 with what these tests import, or the reason they cannot run. */
function pythonReady(): string | undefined {
  const probe = spawnSync(PYTHON, ['-c', 'import cryptography, pytest, venv, ensurepip'], {
    encoding: 'utf8',
    env: pythonEnv({}),
  })
  if (probe.error) return `cannot run ${PYTHON}: install Debian's python3 or set BATON_PYTHON`
  if (probe.status !== 0) {
    return `${PYTHON} lacks a module (${probe.stderr.trim().split('\n').at(-1)}): apt-get install python3-cryptography python3-pytest python3-venv`
  }
  return undefined
}

for (const store of testStores) {
  describe(`the Python client against a hub (${store.name})`, () => {
    let hub: Awaited<ReturnType<Awaited<ReturnType<typeof restartableHub>>['start']>>
    let hubs: Awaited<ReturnType<typeof restartableHub>>
    let ts: SignedClient
    let agentServer: { url: string; server: Server }
    let port: string

    before(async () => {
      const reason = pythonReady()
      if (reason) throw new Error(reason)
      port = String(await freePort())
      hubs = await restartableHub(store, {
        BATON_ADMISSION: 'open',
        BATON_COMPUTE_EMBEDDED: 'true',
      })
      hub = await hubs.start({ BATON_PORT: port })
      ts = await signedAgent(hub)
      agentServer = await tsAgentServer(
        () => hub,
        ts,
        async () => {
          await hub.stop()
          hub = await hubs.start({ BATON_PORT: port })
        },
      )
    })

    after(async () => {
      agentServer?.server.close()
      await hub?.stop()
      await hubs?.drop()
    })

    test('pytest: identities, contracts, signing vectors, features and the walkthrough', async () => {
      const { code, out } = await runProcess(
        PYTHON,
        ['-m', 'pytest', '-p', 'no:cacheprovider', '-q', '-rfE', 'tests'],
        {
          cwd: pkg,
          env: pythonEnv({
            PYTHONPATH: path.join(pkg, 'src'),
            BATON_HUB_URL: hub.url,
            BATON_TS_AGENT: agentServer.url,
          }),
        },
      )
      for (const line of out.trimEnd().split('\n')) console.log(line)
      assert.equal(code, 0, 'pytest failed')
    })

    test('from a clean machine: pip installs the package with no index; a fresh identity hands work to the TypeScript agent', async () => {
      const work = mkdtempSync(path.join(tmpdir(), 'baton-py-clean-'))
      try {
        // A copy of the package as a fresh clone has it, so the build leaves nothing in the repo.
        const source = path.join(work, 'python')
        cpSync(pkg, source, {
          recursive: true,
          filter: (p) => !/(__pycache__|\.egg-info|[/\\]build)$/.test(p),
        })
        const env = pythonEnv({})
        // The system site gives the venv Debian's cryptography and setuptools; nothing is fetched.
        const venv = path.join(work, 'venv')
        const made = await runProcess(PYTHON, ['-m', 'venv', '--system-site-packages', venv], {
          cwd: work,
          env,
        })
        assert.equal(made.code, 0, made.out)
        const pip = await runProcess(
          path.join(venv, 'bin/python'),
          ['-m', 'pip', 'install', '--no-index', '--no-build-isolation', '--no-cache-dir', source],
          { cwd: work, env },
        )
        assert.equal(pip.code, 0, pip.out)
        const script = path.join(here, 'clean_machine.py')
        const ran = await runProcess(path.join(venv, 'bin/python'), [script], {
          cwd: work,
          env: pythonEnv({ BATON_HUB_URL: hub.url, BATON_TS_AGENT: agentServer.url }),
        })
        for (const line of ran.out.trimEnd().split('\n')) console.log(line)
        assert.equal(ran.code, 0, 'the installed client failed')
      } finally {
        rmSync(work, { recursive: true, force: true })
      }
    })
  })
}
