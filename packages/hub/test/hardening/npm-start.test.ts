import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { exited, repoRoot } from '../support.js'

/** Kills every process started with this data directory (an orphaned hub, when the test fails). */
function killHubsOf(dataDir: string): void {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
      if (env.includes(`BATON_DATA_DIR=${dataDir}`)) process.kill(Number(pid), 'SIGKILL')
    } catch {
      // a process that ended meanwhile, or one we may not read
    }
  }
}

// Docker, systemd and CI send SIGTERM to the top process, which for `npm start` is npm: the hub
// behind it must end gracefully too, not keep serving as an orphan.
test('SIGTERM to `npm start` ends the hub gracefully', { timeout: 60_000 }, async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'baton-npm-start-'))
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_DATA_DIR: dataDir,
      BATON_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  npm.stdout!.on('data', (chunk) => {
    out += chunk
  })
  try {
    const url = await new Promise<string>((resolve, reject) => {
      npm.stdout!.on('data', () => {
        const m = /"url":"(http:\/\/[^"]+)".*"msg":"hub listening"/.exec(out)
        if (m) resolve(m[1]!)
      })
      npm.once('exit', (code) => reject(new Error(`npm start exited ${code}: ${out}`)))
    })
    assert.equal((await fetch(`${url}/healthz`)).status, 200)
    // It says the dashboard is off (no BATON_ADMIN_TOKEN) and how to turn it on.
    assert.match(out, /"dashboard":"off","turnOn":"[^"]+"/)

    npm.kill('SIGTERM')
    await exited(npm)
    // The hub logs its graceful stop, and nothing answers on its port any more.
    assert.match(out, /"signal":"SIGTERM"/)
    assert.match(out, /"msg":"stopped"/)
    await assert.rejects(fetch(`${url}/healthz`))
  } finally {
    npm.kill('SIGKILL')
    killHubsOf(dataDir)
    rmSync(dataDir, { recursive: true, force: true })
  }
})
