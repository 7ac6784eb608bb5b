// The connection guide and the two-agent walkthrough, run as a reader runs them: every command of
// their `sh` blocks, in order, in each agent's own directory, against a real hub, with the files
// the walkthrough shows, and each answer checked against the comment the guide writes after it.
import assert from 'node:assert/strict'
import { exec } from 'node:child_process'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { batonBin, repoRoot, startTestHub, type TestHub, testStores } from './support.js'

const sh = promisify(exec)
const ADMIN = 'guides-operator-token-0123456789abcdef'
/** The hub address the guides write; a reader puts their own hub's there. */
const GUIDE_HUB = 'http://127.0.0.1:8080'
const SEED_FILES = path.join(repoRoot, 'examples/walkthrough/files')

const guide = (name: string) => readFileSync(path.join(repoRoot, 'docs', `${name}.md`), 'utf8')

interface Block {
  role: string
  lines: string[]
}

/** The `sh` blocks whose first line names who runs them (`# as the owner`), in order. */
function shBlocks(markdown: string): Block[] {
  const blocks: Block[] = []
  for (const m of markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    const [head = '', ...lines] = m[1]!.trimEnd().split('\n')
    const role = /^# as the (\w+)(?:,|$)/.exec(head)?.[1]
    if (role) blocks.push({ role, lines })
  }
  return blocks
}

/** Each JSON file the guide shows: a paragraph holding just `name.json`, then its block. */
function jsonFiles(markdown: string): Map<string, string> {
  const files = new Map<string, string>()
  for (const m of markdown.matchAll(/^`([a-z-]+\.json)`\n\n```json\n([\s\S]*?)^```$/gm)) {
    files.set(m[1]!, m[2]!)
  }
  return files
}

interface Run {
  hub: TestHub
  work: string
  values: Record<string, string>
  env: Record<string, string>
  files: Map<string, string>
}

const PLACEHOLDERS =
  /RUN_ID|AGENT_PRINCIPAL|OWNER_PRINCIPAL|PEER_PRINCIPAL|TASK_ID|GRANT_ID|NOTICE_MESSAGE_ID|REPLY_MESSAGE_ID|EXPIRES_AT/g

function fill(run: Run, text: string): string {
  // No word boundaries: a placeholder can sit inside a word, as in handoff%2FRUN_ID%2Fowner.json.
  return text.replace(PLACEHOLDERS, (name) => {
    const v = run.values[name]
    if (v === undefined) throw new Error(`placeholder ${name} is not resolved yet`)
    return v
  })
}

/** Runs one guide's blocks; `roles` maps each block's role to the agent directory it runs in. */
async function runBlocks(run: Run, blocks: Block[], roles: Record<string, string>): Promise<void> {
  for (const block of blocks) {
    const who = roles[block.role]
    assert.ok(who, `no directory for the role ${block.role}`)
    const cwd = path.join(run.work, who)
    mkdirSync(cwd, { recursive: true })
    for (const raw of block.lines) {
      const [command = '', comment = ''] = raw.split(/\s+# /)
      const assign = /^([A-Z_]+)=(\S+)$/.exec(command)
      if (assign) {
        run.env[assign[1]!] = assign[2]!.replace(GUIDE_HUB, run.hub.url)
        continue
      }
      const line = fill(run, command).replaceAll(GUIDE_HUB, run.hub.url)
      for (const file of line.match(/\bhandoff-[a-z-]+\.json\b/g) ?? []) {
        const text = run.files.get(file)
        assert.ok(text, `${file} is shown in the guide`)
        writeFileSync(path.join(cwd, file), fill(run, text))
      }
      let stdout = ''
      let stderr = ''
      let failed = false
      try {
        ;({ stdout, stderr } = await sh(line, { cwd, env: { ...process.env, ...run.env } }))
      } catch (e) {
        ;({ stdout, stderr } = e as { stdout: string; stderr: string })
        failed = true
      }
      const status = /^HTTP (\d{3})$/m.exec(stderr)?.[1]
      const body = status && stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : {}
      for (const clause of comment.split(/;\s*/).filter(Boolean)) {
        const answers = /^answers (\d{3})$/.exec(clause)
        const save = /^save its (\w+) as ([A-Z_]+)$/.exec(clause)
        const output = /^save the output as ([A-Z_]+)$/.exec(clause)
        const is = /^its (\w+) is (\S+)$/.exec(clause)
        if (answers) assert.equal(status, answers[1], `${who}: ${line}\n${stdout}${stderr}`)
        else if (save) run.values[save[2]!] = String(body[save[1]!])
        else if (output) run.values[output[1]!] = stdout.trim()
        else if (is)
          assert.equal(String(body[is[1]!]), fill(run, is[2]!), `${who}: ${line}: ${clause}`)
        else assert.fail(`the guide's comment ${JSON.stringify(clause)} is not understood`)
      }
      // A command that is not a request must simply work.
      if (!status) assert.equal(failed, false, `${who}: ${line}\n${stdout}${stderr}`)
    }
  }
}

test('the walkthrough shows exactly the seed’s files, unchanged', () => {
  const shown = jsonFiles(guide('walkthrough'))
  const seed = readdirSync(SEED_FILES).sort()
  assert.deepEqual([...shown.keys()].sort(), seed)
  for (const name of seed) {
    assert.deepEqual(
      JSON.parse(shown.get(name)!),
      JSON.parse(readFileSync(path.join(SEED_FILES, name), 'utf8')),
      name,
    )
  }
})

test('every command the guides show names a real request and an expected answer', () => {
  for (const name of ['connect', 'walkthrough']) {
    const requests = shBlocks(guide(name))
      .flatMap((b) => b.lines)
      .filter((l) => l.startsWith('baton request'))
    assert.ok(requests.length > 0, name)
    for (const l of requests) {
      assert.match(
        l,
        /^baton request "\$HUB" agent\.identity\.json [A-Z]+ \S+( \S+\.json)? +# answers \d{3}/,
      )
    }
  }
})

for (const store of testStores) {
  describe(`the connection guide and the walkthrough, run as written (${store.name})`, () => {
    let run: Run
    before(async () => {
      const hub = await startTestHub(store, {
        BATON_ADMIN_TOKEN: ADMIN,
        BATON_ADMISSION: 'approval',
      })
      const work = mkdtempSync(path.join(tmpdir(), 'baton-guides-'))
      // The reader's `baton`, as connect.md defines it: the checkout's own command.
      const bin = path.join(work, 'bin')
      mkdirSync(bin)
      writeFileSync(
        path.join(bin, 'baton'),
        `#!/bin/sh\nexec "${process.execPath}" "${batonBin}" "$@"\n`,
      )
      chmodSync(path.join(bin, 'baton'), 0o755)
      run = {
        hub,
        work,
        values: { RUN_ID: `run-${Date.now().toString(36)}` },
        env: { PATH: `${bin}${path.delimiter}${process.env.PATH}`, BATON_ADMIN_TOKEN: ADMIN },
        files: jsonFiles(guide('walkthrough')),
      }
    })
    after(async () => {
      await run.hub.close()
      rmSync(run.work, { recursive: true, force: true })
    })

    test('three agents connect, are admitted and return, as connect.md says', async () => {
      const blocks = shBlocks(guide('connect'))
      assert.ok(blocks.some((b) => b.role === 'operator'))
      for (const who of ['owner', 'peer', 'third']) {
        delete run.values.AGENT_PRINCIPAL
        await runBlocks(run, blocks, { agent: who, operator: `${who}-operator` })
        if (who === 'owner') run.values.OWNER_PRINCIPAL = run.values.AGENT_PRINCIPAL!
        if (who === 'peer') run.values.PEER_PRINCIPAL = run.values.AGENT_PRINCIPAL!
      }
    })

    test('owner and peer hand over the task as walkthrough.md says, to revocation', async () => {
      assert.ok(run.values.PEER_PRINCIPAL, 'the agents are connected')
      await runBlocks(run, shBlocks(guide('walkthrough')), {
        owner: 'owner',
        peer: 'peer',
        third: 'third',
      })
    })
  })
}
