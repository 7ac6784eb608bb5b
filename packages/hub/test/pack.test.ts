// The four packages as a user gets them: `npm pack` tarballs installed into an empty project,
// with third-party dependencies from the local npm cache. Plain node imports the SDKs, a
// TypeScript consumer type-checks against the shipped declarations, and the installed `baton`
// bin serves a hub and signs a request.
import assert from 'node:assert/strict'
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { repoRoot } from './support.js'

const PACKAGES = ['protocol', 'context', 'client', 'hub']

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd, env: { ...process.env, ...env }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (error as { code?: unknown }).code : 0
        resolve({ code: typeof code === 'number' ? code : 2, stdout, stderr })
      },
    )
  })
}

// Under `npm test`, the npm that started the run; otherwise the npm on PATH.
const npm = (args: string[], cwd: string) =>
  process.env.npm_execpath
    ? run(process.execPath, [process.env.npm_execpath, ...args], cwd)
    : run('npm', args, cwd)

describe('npm pack and install', () => {
  let dir: string
  let project: string
  let bin: string
  let hub: ChildProcess | undefined

  before(async () => {
    for (const p of PACKAGES) {
      assert.ok(
        existsSync(path.join(repoRoot, 'packages', p, 'dist/index.js')),
        `packages/${p}/dist is missing: run npm run build`,
      )
    }
    dir = await mkdtemp(path.join(tmpdir(), 'baton-pack-'))
    const tarballs = path.join(dir, 'tarballs')
    mkdirSync(tarballs)
    const packed = await npm(
      [
        'pack',
        '--json',
        '--ignore-scripts',
        '--pack-destination',
        tarballs,
        ...PACKAGES.flatMap((p) => ['--workspace', `packages/${p}`]),
      ],
      repoRoot,
    )
    assert.equal(packed.code, 0, packed.stderr)
    const files = (JSON.parse(packed.stdout) as { filename: string }[]).map((f) =>
      path.join(tarballs, f.filename),
    )
    assert.equal(files.length, PACKAGES.length)

    project = path.join(dir, 'project')
    mkdirSync(project)
    await writeFile(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    )
    // Third-party packages come from the npm cache the repository's own install filled; only
    // metadata the cache lacks is asked of the registry.
    // Install scripts are skipped, so better-sqlite3 takes the binary already built for this Node.
    const installed = await npm(
      [
        'install',
        '--prefer-offline',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--no-package-lock',
        ...files,
      ],
      project,
    )
    assert.equal(installed.code, 0, installed.stderr)
    const release = path.join(project, 'node_modules/better-sqlite3/build/Release')
    mkdirSync(release, { recursive: true })
    copyFileSync(
      path.join(repoRoot, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
      path.join(release, 'better_sqlite3.node'),
    )
    bin = path.join(project, 'node_modules/.bin/baton')
  })

  after(async () => {
    hub?.kill('SIGTERM')
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('each tarball holds dist, declarations, a licence and a README, and no sources', async () => {
    for (const p of PACKAGES) {
      const root = path.join(project, 'node_modules/@baton', p)
      const manifest = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8'))
      assert.equal(manifest.license, 'Apache-2.0')
      assert.equal(manifest.private, undefined)
      for (const f of ['LICENSE', 'README.md', 'dist/index.js', 'dist/index.d.ts']) {
        assert.ok(existsSync(path.join(root, f)), `${p} lacks ${f}`)
      }
      assert.equal(existsSync(path.join(root, 'src')), false, `${p} ships its sources`)
      assert.equal(existsSync(path.join(root, 'dist/.tsbuildinfo')), false)
      // Every file an export condition names is in the tarball (no condition for sources); the
      // keys are subpaths (`./primitives`), the values the files.
      const targets = (value: unknown): string[] =>
        typeof value === 'string'
          ? [value]
          : Object.values(value as Record<string, unknown>).flatMap(targets)
      for (const target of targets(manifest.exports)) {
        assert.ok(existsSync(path.join(root, target)), `${p} exports ${target}, not shipped`)
      }
    }
  })

  test('plain node imports @baton/client and @baton/context', async () => {
    const script = `
      import { BatonError, createIdentity } from '@baton/client'
      import { BatonError as ProtocolError } from '@baton/protocol'
      import { createSigner } from '@baton/context'
      import { BatonError as PrimitiveError } from '@baton/protocol/primitives'
      import { loadIdentity } from '@baton/client/requests'
      if (BatonError !== ProtocolError) throw new Error('@baton/client re-exports another BatonError')
      if (PrimitiveError !== ProtocolError) throw new Error('the primitives hold another BatonError')
      if (typeof loadIdentity !== 'function') throw new Error('@baton/client/requests is empty')
      import { generateKeyPairSync } from 'node:crypto'
      const id = createIdentity('http://127.0.0.1:1/.well-known/agent-net')
      const { privateKey } = generateKeyPairSync('ed25519')
      const signer = await createSigner({ iss: 'spiffe://a.example/agent/a', key: privateKey.export({ format: 'jwk' }) })
      console.log(JSON.stringify({ principal: id.principal, alg: signer.alg }))
    `
    await writeFile(path.join(project, 'plain.mjs'), script)
    const out = await run(process.execPath, ['plain.mjs'], project)
    assert.equal(out.code, 0, out.stderr)
    const answer = JSON.parse(out.stdout)
    assert.match(answer.principal, /^did:key:z6Mk/)
    assert.equal(answer.alg, 'EdDSA')
  })

  test('a TypeScript consumer type-checks against the shipped declarations', async () => {
    await writeFile(
      path.join(project, 'consumer.ts'),
      `import { createIdentity, SignedClient, type BatonError as ClientError } from '@baton/client'
import type { JsonWebKey } from 'node:crypto'
import { createSigner, type Signer } from '@baton/context'
import { BatonError, type ErrorCode } from '@baton/protocol'
import { loadConfig, startHub } from '@baton/hub'

const code: ErrorCode = 'handoff_not_found'
const err: BatonError = new BatonError(code, 'missing')
const same: ClientError = err
const identity = createIdentity('http://127.0.0.1:1/.well-known/agent-net')
const principal: string = identity.principal
const connect: typeof SignedClient.connect = SignedClient.connect
const signer: Promise<Signer> = createSigner({ iss: 'x', key: {} as JsonWebKey })
const port: number = loadConfig({ BATON_PORT: '0' }).port
void [err, same, principal, connect, signer, port, startHub]
// @ts-expect-error a code outside the registry is not an ErrorCode
const wrong: ErrorCode = 'no_such_code'
void wrong
`,
    )
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          types: ['node'],
          typeRoots: [path.join(repoRoot, 'node_modules/@types')],
        },
        files: ['consumer.ts'],
      }),
    )
    const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc')
    const out = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], project)
    assert.equal(out.code, 0, out.stdout + out.stderr)
  })

  test('the installed baton bin prints its version, serves a hub and signs a request', async () => {
    const version = await run(bin, ['--version'], project)
    assert.equal(version.code, 0, version.stderr)
    const manifest = JSON.parse(
      await readFile(path.join(repoRoot, 'packages/hub/package.json'), 'utf8'),
    )
    assert.equal(version.stdout.trim(), manifest.version)

    const data = path.join(dir, 'data')
    hub = spawn(bin, ['serve'], {
      cwd: project,
      env: {
        ...process.env,
        BATON_HOST: '127.0.0.1',
        BATON_PORT: '0',
        BATON_DATA_DIR: data,
        DATABASE_URL: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      hub!.stdout!.on('data', (chunk) => {
        out += chunk
        const m = /"url":"(http:\/\/[^"]+)".*"msg":"hub listening"/.exec(out)
        if (m) resolve(m[1]!)
      })
      hub!.once('exit', (code) => reject(new Error(`baton serve exited ${code}: ${out}`)))
    })
    const discovery = `${url}/.well-known/agent-net`
    const init = await run(
      bin,
      ['identity', 'init', '--hub', discovery, '--out', 'agent.json'],
      project,
    )
    assert.equal(init.code, 0, init.stderr)
    const principal = JSON.parse(init.stdout).principal
    const me = await run(bin, ['request', discovery, 'agent.json', 'GET', '/v1/me'], project)
    assert.equal(me.code, 0, me.stderr)
    assert.equal(JSON.parse(me.stdout).principal, principal)

    const disc = (await (await fetch(discovery)).json()) as Record<string, unknown>
    assert.equal(JSON.stringify(disc).includes(manifest.version), true)
    const dashboard = await fetch(`${url}/dashboard/`)
    assert.equal(dashboard.status, 403)
    assert.match(dashboard.headers.get('content-type') ?? '', /text\/html/)

    // The guides ship inside the package: the installed hub serves the two-agent walkthrough to
    // anyone, as Markdown and as a page, with no repository beside it.
    const guides = (await (await fetch(`${url}/guides`)).json()) as { guides: { name: string }[] }
    for (const name of ['readme', 'connect', 'walkthrough']) {
      assert.ok(
        guides.guides.some((g) => g.name === name),
        `${name} is not served`,
      )
    }
    const walkthrough = await fetch(`${url}/guides/walkthrough`)
    assert.equal(walkthrough.status, 200)
    const { markdown } = (await walkthrough.json()) as { markdown: string }
    assert.match(markdown, /baton request/)
    const page = await fetch(`${url}/docs/walkthrough`)
    assert.equal(page.status, 200)
    assert.match(await page.text(), /<h1[^>]*>/)
  })
})
