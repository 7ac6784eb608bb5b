import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import {
  batonBin,
  exited,
  repoRoot,
  serveProcess,
  testStores,
} from '../../packages/hub/test/support.js'
import { runWalkthrough } from './walkthrough.js'

const run = promisify(execFile)
const ADMIN = 'walkthrough-operator-token-0123456789abcdef'

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })
}

for (const store of testStores) {
  describe(`the seed 000 walkthrough, end to end (${store.name})`, () => {
    test('owner and peer hand over a task; restart, isolation, revocation, reconciliation', async () => {
      const db = await store.fresh()
      const work = mkdtempSync(path.join(tmpdir(), 'baton-walkthrough-'))
      const port = String(await freePort())
      // Approval mode: the operator admits each new key, as on a real hub.
      const env = {
        ...db.env,
        BATON_PORT: port,
        BATON_ADMIN_TOKEN: ADMIN,
        BATON_ADMISSION: 'approval',
      }
      let hub = await serveProcess(env)
      const discoveryUrl = `${hub.url}/.well-known/agent-net`
      try {
        const steps = await runWalkthrough({
          discoveryUrl,
          workDir: work,
          async restart() {
            hub.child.kill('SIGTERM')
            await exited(hub.child)
            hub = await serveProcess(env)
          },
          async approve(principal) {
            await run(
              process.execPath,
              [batonBin, 'admin', 'approve', principal, '--hub', hub.url, '--token', ADMIN],
              { cwd: repoRoot },
            )
          },
          log: (line) => console.log(`# ${line}`),
        })
        console.log(`# ${steps.length} requests, each a fresh baton request process`)
      } finally {
        hub.child.kill('SIGTERM')
        await exited(hub.child)
        rmSync(work, { recursive: true, force: true })
        await db.drop()
      }
    })
  })
}
