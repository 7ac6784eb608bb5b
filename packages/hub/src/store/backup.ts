import { randomBytes } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { sqlitePath } from './database.js'
import { KEK_FILE, KeySealer, type SealPurpose } from './sealing.js'

// The most pages one backup step may copy (a step copies at most this many; 0 would copy none).
const ALL_PAGES = 0x7fffffff

/** A backup or restore that cannot go ahead; the message says why and what to do. */
export class BackupRefused extends Error {}

/**
 * Whether a process holds the SQLite database open (a hub running on its data directory). Every
 * WAL connection holds a shared lock on the file while it is open, so an exclusive lock, asked for
 * without waiting, is refused exactly while another connection exists; nothing is written.
 */
export function sqliteInUse(file: string): boolean {
  if (!existsSync(file)) return false
  const probe = new SQLite(file, { fileMustExist: true, timeout: 0 })
  try {
    probe.pragma('locking_mode = EXCLUSIVE')
    probe.exec('begin exclusive')
    probe.exec('commit')
    return false
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') return true
    throw error
  } finally {
    probe.close()
  }
}

function fsyncPath(target: string): void {
  const fd = openSync(target, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Checks a database file whole (`integrity_check`) and makes it one self-contained file. */
function checkCopy(file: string): void {
  const copy = new SQLite(file, { fileMustExist: true })
  try {
    // A copy of a WAL database says WAL in its header; a backup file is better a single file.
    copy.pragma('journal_mode = DELETE')
    const result = copy.pragma('integrity_check', { simple: true })
    if (result !== 'ok') throw new BackupRefused(`the copy fails its integrity check: ${result}`)
  } finally {
    copy.close()
  }
}

/** What `backupSqlite` wrote. */
export interface BackupResult {
  out: string
  bytes: number
  /** The KEK file the database's sealed keys need, when the data directory has one. */
  kek?: string
}

/**
 * Copies a hub's SQLite database to `out` consistently while the hub keeps writing: SQLite's
 * online backup API, from a connection of its own, copies every page in one step, so the copy is
 * one read snapshot of committed transactions (in WAL mode the hub's writes go on meanwhile). The
 * copy is checked whole before it is moved into place, 0600. The KEK file is not copied: a
 * database copy must not carry the key that unseals it.
 */
export async function backupSqlite(opts: { dataDir: string; out: string }): Promise<BackupResult> {
  const file = sqlitePath(opts.dataDir)
  if (!existsSync(file)) throw new BackupRefused(`no hub database at ${file}`)
  const out = path.resolve(opts.out)
  if (existsSync(out)) throw new BackupRefused(`${out} exists: name a new file`)
  const temp = `${out}.partial-${randomBytes(6).toString('hex')}`
  const source = new SQLite(file, { fileMustExist: true, timeout: 5000 })
  try {
    // Every remaining page in one step: one snapshot, never restarted by the hub's writes the
    // way a page-at-a-time backup is.
    await source.backup(temp, { progress: () => ALL_PAGES })
    checkCopy(temp)
    chmodSync(temp, 0o600)
    fsyncPath(temp)
    renameSync(temp, out)
    fsyncPath(path.dirname(out))
  } catch (error) {
    rmSync(temp, { force: true })
    throw error
  } finally {
    source.close()
  }
  const kek = path.join(opts.dataDir, KEK_FILE)
  return { out, bytes: statSync(out).size, ...(existsSync(kek) ? { kek: path.resolve(kek) } : {}) }
}

/** What `restoreSqlite` did. */
export interface RestoreResult {
  dataDir: string
  /** Where the database (and KEK file) it replaced were moved, if there were any. */
  replaced?: string
  /** How the restored database's sealed keys open: the KEK file, the secret, or nothing sealed. */
  keys: 'kek file' | 'BATON_HUB_KEY_SECRET' | 'none sealed'
}

/** The sealed values of a hub database: its hub key and transfer token keys, with their purposes. */
function sealedValues(file: string): { purpose: SealPurpose; stored: string }[] {
  const db = new SQLite(file, { fileMustExist: true, readonly: true })
  try {
    const has = (table: string) =>
      db.prepare(`select 1 from sqlite_master where type = 'table' and name = ?`).get(table)
    if (!has('hub_keys')) throw new BackupRefused(`${file} is not a Baton hub database`)
    const hub = db.prepare('select private_jwk as v from hub_keys').all() as { v: string }[]
    const transfer = has('transfer_token_keys')
      ? (db.prepare('select secret as v from transfer_token_keys').all() as { v: string }[])
      : []
    return [
      ...hub.map((r) => ({ purpose: 'hub key' as const, stored: r.v })),
      ...transfer.map((r) => ({ purpose: 'transfer token key' as const, stored: r.v })),
    ]
  } finally {
    db.close()
  }
}

/**
 * Puts a backup back as the data directory's database, refusing while a hub holds it open. The
 * backup is checked whole and its sealed keys are opened before anything is replaced: with the
 * KEK file given, else the one already in the data directory (keys sealed under
 * BATON_HUB_KEY_SECRET need that secret). What it replaces is moved aside, never deleted.
 */
export async function restoreSqlite(opts: {
  from: string
  dataDir: string
  kek?: string | undefined
  hubKeySecret?: string | undefined
  now?: () => number
}): Promise<RestoreResult> {
  const from = path.resolve(opts.from)
  if (!existsSync(from)) throw new BackupRefused(`no backup at ${from}`)
  const dataDir = path.resolve(opts.dataDir)
  const file = sqlitePath(dataDir)
  const refuseIfRunning = () => {
    if (sqliteInUse(file)) {
      throw new BackupRefused(
        `a hub is running on ${dataDir} (its database is open): stop it, then restore`,
      )
    }
  }
  refuseIfRunning()
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const staging = mkdtempSync(path.join(dataDir, '.restore-'))
  try {
    const staged = sqlitePath(staging)
    const source = new SQLite(from, { fileMustExist: true, readonly: true })
    try {
      await source.backup(staged, { progress: () => ALL_PAGES })
    } finally {
      source.close()
    }
    checkCopy(staged)
    chmodSync(staged, 0o600)

    const sealed = sealedValues(staged)
    const underFile = sealed.filter((s) => s.stored.startsWith('sealed:f1:'))
    const underSecret = sealed.filter((s) => s.stored.startsWith('sealed:v1:'))
    const currentKek = path.join(dataDir, KEK_FILE)
    const kekSource = opts.kek ? path.resolve(opts.kek) : existsSync(currentKek) ? currentKek : ''
    if (underFile.length > 0) {
      if (!kekSource) {
        throw new BackupRefused(
          `the backup's keys are sealed under a ${KEK_FILE} file and ${dataDir} has none: pass --kek with the KEK file kept from the backed-up hub`,
        )
      }
      copyFileSync(kekSource, path.join(staging, KEK_FILE))
      chmodSync(path.join(staging, KEK_FILE), 0o600)
    }
    if (underSecret.length > 0 && !opts.hubKeySecret) {
      throw new BackupRefused(
        "the backup's keys are sealed under BATON_HUB_KEY_SECRET: set it to the backed-up hub's secret",
      )
    }
    if (sealed.length > 0) {
      const sealer = KeySealer.load({ hubKeySecret: opts.hubKeySecret, dataDir: staging })
      for (const s of sealed) {
        try {
          sealer.unseal(s.purpose, s.stored)
        } catch {
          const which = s.stored.startsWith('sealed:f1:')
            ? `the ${KEK_FILE} file (${kekSource})`
            : 'BATON_HUB_KEY_SECRET'
          throw new BackupRefused(
            `${which} does not open the backup's ${s.purpose}: give the one kept from the backed-up hub`,
          )
        }
      }
    }

    refuseIfRunning()
    const moves: [string, string][] = [[staged, file]]
    const stagedKek = path.join(staging, KEK_FILE)
    const kekChanges =
      existsSync(stagedKek) &&
      (!existsSync(currentKek) || !readFileSync(stagedKek).equals(readFileSync(currentKek)))
    if (kekChanges) moves.push([stagedKek, currentKek])
    const old = [file, `${file}-wal`, `${file}-shm`, ...(kekChanges ? [currentKek] : [])].filter(
      existsSync,
    )
    let replaced: string | undefined
    if (old.length > 0) {
      const stamp = new Date(opts.now?.() ?? Date.now()).toISOString().replace(/[:.]/g, '-')
      replaced = path.join(dataDir, `replaced-${stamp}`)
      mkdirSync(replaced, { mode: 0o700 })
      for (const f of old) renameSync(f, path.join(replaced, path.basename(f)))
    }
    for (const [a, b] of moves) renameSync(a, b)
    fsyncPath(dataDir)
    return {
      dataDir,
      ...(replaced ? { replaced } : {}),
      keys:
        underSecret.length > 0
          ? 'BATON_HUB_KEY_SECRET'
          : underFile.length > 0
            ? 'kek file'
            : 'none sealed',
    }
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}
