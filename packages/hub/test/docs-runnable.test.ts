// Every code block of the docs marked runnable runs here against a real hub (README's "Runnable
// docs" says how to mark one). A doc's blocks run in order against one fresh hub, in one fresh
// folder; its `sh` blocks share one bash session, so a variable one block sets is seen by the
// next. A block that fails, fails the test with its file, line and output.

import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import { type DocBlock, docFiles, findRunnableBlocks, hubOptions } from './doc-blocks.js'
import { batonBin, PG_KEY_SECRET, repoRoot, startTestHub, testStores } from './support.js'

/** The address the docs give the hub, replaced by the test hub's. */
const DOC_HUB = 'http://127.0.0.1:8080'
const BLOCK_TIMEOUT_MS = 60_000
const tsxLoader = import.meta.resolve('tsx')

const docs = docFiles()
  .map((file) => ({
    file,
    blocks: findRunnableBlocks(readFileSync(path.join(repoRoot, file), 'utf8'), file),
  }))
  .filter((d) => d.blocks.length > 0)

// js and ts blocks run from files inside the repository, so `@baton/client` resolves as it does
// for a user who installed it; .tmp/ is ignored by git.
const scripts = path.join(repoRoot, '.tmp', `docs-run-${randomBytes(4).toString('hex')}`)
mkdirSync(scripts, { recursive: true })
after(() => rmSync(scripts, { recursive: true, force: true }))

test('the docs that promise runnable examples still mark them', () => {
  const marked = docs.map((d) => d.file)
  for (const f of ['README.md', 'docs/cli.md', 'packages/client/README.md']) {
    assert.ok(marked.includes(f), `${f} has no runnable block`)
  }
})

/** The environment of a doc's blocks: the user's, without the test run's hub settings. */
function blockEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith('BATON_') && k !== 'DATABASE_URL') env[k] = v
  }
  return { ...env, ...extra }
}

/** One bash session that runs blocks one after another, each answered with its output. */
class Shell {
  private child: ChildProcess
  private out = ''
  private exit: Promise<number | null>

  constructor(cwd: string, env: Record<string, string>) {
    this.child = spawn('bash', ['--noprofile', '--norc'], {
      cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    this.child.stdout!.on('data', (c) => (this.out += c))
    this.child.stderr!.on('data', (c) => (this.out += c))
    this.exit = new Promise((r) => this.child.once('exit', (code) => r(code)))
    // `baton` and `npx baton` are the repository's command, as a user's installed one would be.
    this.child.stdin!.write(
      [
        'set -euo pipefail',
        `baton() { node ${JSON.stringify(batonBin)} "$@"; }`,
        'npx() { if [ "$#" -gt 0 ] && [ "$1" = baton ]; then shift; baton "$@"; else command npx "$@"; fi; }',
        '',
      ].join('\n'),
    )
  }

  /** Sources a script in the session; answers its output and whether the session survived. */
  async run(script: string): Promise<{ ok: boolean; output: string }> {
    const done = `@@block-done-${randomBytes(6).toString('hex')}@@`
    this.out = ''
    this.child.stdin!.write(`source ${JSON.stringify(script)}\necho ${done}\n`)
    const finished = new Promise<boolean>((resolve) => {
      const check = () => {
        if (this.out.includes(done)) {
          this.child.stdout!.off('data', check)
          resolve(true)
        }
      }
      this.child.stdout!.on('data', check)
      check()
    })
    const ok = await Promise.race([
      finished,
      this.exit.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(false), BLOCK_TIMEOUT_MS).unref()),
    ])
    return { ok, output: this.out.replace(`${done}\n`, '') }
  }

  async close() {
    this.child.stdin!.end()
    if (this.child.exitCode === null) this.child.kill()
    await this.exit
  }
}

/** Runs a js or ts block as an ES module with node (through tsx for ts). */
async function runScript(
  file: string,
  lang: 'js' | 'ts',
  cwd: string,
  env: Record<string, string>,
): Promise<{ ok: boolean; output: string }> {
  const args = lang === 'ts' ? ['--import', tsxLoader, file] : [file]
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (c) => (output += c))
  child.stderr.on('data', (c) => (output += c))
  const timer = setTimeout(() => child.kill(), BLOCK_TIMEOUT_MS)
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
  clearTimeout(timer)
  return { ok: code === 0, output }
}

async function runDoc(
  hub: { url: string },
  blocks: DocBlock[],
  work: string,
  env: Record<string, string>,
): Promise<string[]> {
  const outputs: string[] = []
  const shell = new Shell(work, env)
  try {
    for (const block of blocks) {
      const code = block.code.replaceAll(DOC_HUB, hub.url)
      const name = `${block.file.replaceAll('/', '_')}-${block.line}`
      const result =
        block.lang === 'sh'
          ? await shell.run(writeScript(path.join(work, `.${name}.sh`), code))
          : await runScript(
              writeScript(
                path.join(scripts, `${name}.${block.lang === 'ts' ? 'mts' : 'mjs'}`),
                code,
              ),
              block.lang,
              work,
              env,
            )
      if (!result.ok) {
        assert.fail(`${block.file}:${block.line}: the ${block.lang} block failed\n${result.output}`)
      }
      outputs.push(result.output)
    }
    return outputs
  } finally {
    await shell.close()
  }
}

function writeScript(file: string, code: string): string {
  writeFileSync(file, code)
  return file
}

test('a session carries variables between sh blocks and fails a block with its file and line', async () => {
  const doc = [
    '```sh runnable',
    'GREETING=hello',
    '```',
    '```sh runnable',
    'echo "$GREETING from http://127.0.0.1:8080"',
    '```',
    '```js runnable',
    "console.log(await Promise.resolve('js at http://127.0.0.1:8080'))",
    '```',
    '```sh runnable',
    'echo before',
    'false',
    'echo after',
    '```',
  ].join('\n')
  const blocks = findRunnableBlocks(doc, 'x.md')
  const work = mkdtempSync(path.join(tmpdir(), 'baton-docs-'))
  try {
    const hub = { url: 'http://127.0.0.1:1' }
    const env = blockEnv({})
    const outputs = await runDoc(hub, blocks.slice(0, 3), work, env)
    assert.deepEqual(outputs, ['', 'hello from http://127.0.0.1:1\n', 'js at http://127.0.0.1:1\n'])
    await assert.rejects(runDoc(hub, blocks, work, env), (e: Error) => {
      assert.match(e.message, /^x\.md:10: the sh block failed\nbefore\n$/)
      return true
    })
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
})

for (const store of testStores) {
  describe(`runnable docs (${store.name})`, () => {
    for (const { file, blocks } of docs) {
      test(`${file}: ${blocks.map((b) => `${b.lang}:${b.line}`).join(' ')}`, async () => {
        const options = hubOptions(blocks)
        const work = mkdtempSync(path.join(tmpdir(), 'baton-docs-'))
        const adminToken = options.adminToken ? randomBytes(24).toString('hex') : undefined
        // The hub keeps its SQLite data where the blocks' `--data-dir ./data` finds it; on
        // PostgreSQL the blocks get DATABASE_URL and the key secret, as the operator's shell has.
        const hub = await startTestHub(store, {
          BATON_DATA_DIR: path.join(work, 'data'),
          ...(options.admission ? { BATON_ADMISSION: options.admission } : {}),
          ...(adminToken ? { BATON_ADMIN_TOKEN: adminToken } : {}),
        })
        try {
          const env = blockEnv({
            ...(hub.config.databaseUrl
              ? { DATABASE_URL: hub.config.databaseUrl, BATON_HUB_KEY_SECRET: PG_KEY_SECRET }
              : {}),
            ...(adminToken ? { BATON_ADMIN_TOKEN: adminToken } : {}),
          })
          const outputs = await runDoc(hub, blocks, work, env)
          if (process.env.BATON_DOCS_VERBOSE) console.log(outputs.join('\n---\n'))
        } finally {
          await hub.close()
          rmSync(work, { recursive: true, force: true })
        }
      })
    }
  })
}
