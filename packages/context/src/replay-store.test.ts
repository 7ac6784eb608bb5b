import assert from 'node:assert/strict'
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import {
  FileReplayStore,
  type HopRecord,
  MemoryReplayStore,
  type ReplayStore,
} from './replay-store.js'

const rec = (hop: string, digest: string, expiresAt: number): HopRecord => ({
  iss: 'spiffe://a.example/agent/planner',
  hop,
  digest,
  expiresAt,
})

const dirs: string[] = []
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true })
})
async function tempFile(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), 'baton-replay-'))
  dirs.push(d)
  return path.join(d, 'hops.jsonl')
}

function contract(name: string, make: () => Promise<ReplayStore>) {
  describe(`${name} contract`, () => {
    test('remembers a new (iss, hop) and answers the existing record after', async () => {
      const s = await make()
      assert.equal(await s.remember(rec('h1', 'd1', 2000), 1000), undefined)
      assert.equal((await s.remember(rec('h1', 'd2', 3000), 1000))?.digest, 'd1')
      assert.equal((await s.get('spiffe://a.example/agent/planner', 'h1', 1000))?.digest, 'd1')
      await s.close()
    })

    test('a record is live until expiresAt, then forgotten', async () => {
      const s = await make()
      await s.remember(rec('h2', 'd1', 2000), 1000)
      assert.notEqual(await s.get('spiffe://a.example/agent/planner', 'h2', 1999), undefined)
      assert.equal(await s.get('spiffe://a.example/agent/planner', 'h2', 2000), undefined)
      assert.equal(await s.remember(rec('h2', 'd9', 5000), 2000), undefined)
      assert.equal(await s.sweep(6000), 1)
      assert.deepEqual(await s.list(0), [])
      await s.close()
    })

    test('concurrent remembers of one (iss, hop): exactly one is new', async () => {
      const s = await make()
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => s.remember(rec('h3', `d${i}`, 9000), 1000)),
      )
      assert.equal(answers.filter((a) => a === undefined).length, 1)
      await s.close()
    })
  })
}

contract('MemoryReplayStore', async () => new MemoryReplayStore())
contract('FileReplayStore', async () => FileReplayStore.open(await tempFile()))

describe('FileReplayStore durability', () => {
  test('survives a restart, with hop data', async () => {
    const file = await tempFile()
    const a = await FileReplayStore.open(file)
    await a.remember(rec('h1', 'd1', 10_000), 0)
    await a.put({ ...rec('h1', 'd1', 20_000), data: { state: 'accepted', last: 'x.y.z' } })
    await a.close()
    const b = await FileReplayStore.open(file)
    const r = await b.get('spiffe://a.example/agent/planner', 'h1', 0)
    assert.equal(r?.digest, 'd1')
    assert.equal(r?.expiresAt, 20_000)
    assert.deepEqual(r?.data, { state: 'accepted', last: 'x.y.z' })
    assert.equal((await b.remember(rec('h1', 'd2', 30_000), 0))?.digest, 'd1')
    await b.close()
  })

  test('a line cut short by a crash is skipped', async () => {
    const file = await tempFile()
    const a = await FileReplayStore.open(file)
    await a.remember(rec('h1', 'd1', 10_000), 0)
    await a.close()
    await appendFile(file, '{"iss":"spiffe://a.example/agent/planner","hop":"h2","dig')
    const b = await FileReplayStore.open(file)
    assert.equal((await b.list(0)).length, 1)
    await b.remember(rec('h3', 'd3', 10_000), 0)
    await b.close()
    const c = await FileReplayStore.open(file)
    assert.equal((await c.list(0)).length, 2)
    await c.close()
  })

  test('sweep compacts the file to the live records', async () => {
    const file = await tempFile()
    const a = await FileReplayStore.open(file)
    for (let i = 0; i < 10; i++) await a.remember(rec(`h${i}`, 'd', i < 5 ? 100 : 10_000), 0)
    assert.equal(await a.sweep(1000), 5)
    const lines = (await readFile(file, 'utf8')).trim().split('\n')
    assert.equal(lines.length, 5)
    await a.remember(rec('h99', 'd', 10_000), 1000)
    await a.close()
    const b = await FileReplayStore.open(file)
    assert.equal((await b.list(1000)).length, 6)
    await b.close()
  })

  test('a closed store refuses writes', async () => {
    const s = await FileReplayStore.open(await tempFile())
    await s.close()
    await assert.rejects(s.remember(rec('h', 'd', 1), 0), { reason: 'invalid-input' })
  })
})
