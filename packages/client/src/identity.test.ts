import assert from 'node:assert/strict'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { createIdentity, loadIdentity, saveIdentity } from './identity.js'

test('an identity file is written 0600, never overwritten, and loads back to the same principal', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-id-'))
  try {
    const file = path.join(dir, 'agent.identity.json')
    const id = createIdentity('https://hub.example/.well-known/agent-net')
    await saveIdentity(file, id)
    assert.equal((await stat(file)).mode & 0o777, 0o600)
    const json = JSON.parse(await readFile(file, 'utf8'))
    assert.deepEqual(Object.keys(json).sort(), [
      'createdAt',
      'hub',
      'principal',
      'privateKeyJwk',
      'publicKeyJwk',
    ])
    const loaded = await loadIdentity(file)
    assert.equal(loaded.principal, id.principal)
    await assert.rejects(saveIdentity(file, createIdentity('x')), { code: 'identity_file_exists' })
    assert.equal((await loadIdentity(file)).principal, id.principal)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('an identity file readable or writable by group or others is refused', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-id-'))
  try {
    const file = path.join(dir, 'agent.identity.json')
    await saveIdentity(file, createIdentity('h'))
    for (const mode of [0o644, 0o640, 0o604, 0o620, 0o602, 0o666]) {
      await chmod(file, mode)
      await assert.rejects(loadIdentity(file), { code: 'identity_file_insecure' }, mode.toString(8))
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('an identity file whose principal does not match its key is refused', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-id-'))
  try {
    const file = path.join(dir, 'agent.identity.json')
    await saveIdentity(file, createIdentity('h'))
    const json = JSON.parse(await readFile(file, 'utf8'))
    json.principal = createIdentity('h').principal
    await writeFile(file, JSON.stringify(json), { mode: 0o600 })
    await assert.rejects(loadIdentity(file), { code: 'identity_file_invalid' })
    await writeFile(file, 'not json', { mode: 0o600 })
    await assert.rejects(loadIdentity(file), { code: 'identity_file_invalid' })
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
