import path from 'node:path'
import { parseArgs } from 'node:util'
import { BackupRefused, backupSqlite, restoreSqlite } from '../store/backup.js'
import { KEK_FILE } from '../store/sealing.js'
import { type Io, UsageError } from './io.js'

const BACKUP_USAGE = `baton backup --out FILE [--data-dir D]

Copies the hub's SQLite database (D/baton.sqlite; D is BATON_DATA_DIR, else ./data) to FILE, a
consistent snapshot taken while the hub keeps running, checked whole before it is kept (0600).
The key-encryption key file D/${KEK_FILE} is not copied into the backup: keep a copy of it apart
from the backups (or set BATON_HUB_KEY_SECRET), since the hub's keys in the database open only
with it. With DATABASE_URL set (a PostgreSQL hub) it refuses: use pg_dump (see
docs/operations.md).`

const RESTORE_USAGE = `baton restore --from FILE [--data-dir D] [--kek KEK_FILE]

Puts a backup made by baton backup back as D/baton.sqlite, refusing while a hub runs on D. The
backup's sealed keys must open first: with --kek (the ${KEK_FILE} kept from the backed-up hub),
else D/${KEK_FILE}, else BATON_HUB_KEY_SECRET when they were sealed under it. The database and
KEK file it replaces are moved to D/replaced-<time>/, never deleted. With DATABASE_URL set (a
PostgreSQL hub) it refuses: use pg_restore (see docs/operations.md).`

function dataDirOf(given: string | undefined): string {
  return path.resolve(given || process.env.BATON_DATA_DIR || './data')
}

/**
 * A hub on PostgreSQL (DATABASE_URL, as `baton serve` reads it) has no SQLite file to copy or
 * replace: a ./data/baton.sqlite there would be a stale one. Says so, and where pg_dump is.
 */
function refusedOnPostgres(io: Io, command: 'backup' | 'restore'): number | undefined {
  if (!process.env.DATABASE_URL) return undefined
  const tool = command === 'backup' ? 'pg_dump' : 'pg_restore'
  io.stderr(
    `baton ${command}: DATABASE_URL is set, so the hub's database is PostgreSQL, and baton ${command} works on a SQLite hub only (any baton.sqlite in the data directory is not the hub's). Use ${tool}: see "PostgreSQL" in docs/operations.md.`,
  )
  return 1
}

function refused(error: unknown, io: Io, command: string): number {
  if (!(error instanceof BackupRefused)) throw error
  io.stderr(`baton ${command}: ${error.message}`)
  return 1
}

/** `baton backup`: a consistent copy of a live SQLite hub. */
export async function backupCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string' },
      'data-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  if (values.help) {
    io.stdout(BACKUP_USAGE)
    return 0
  }
  if (!values.out) throw new UsageError('backup needs --out FILE (see --help)')
  const onPostgres = refusedOnPostgres(io, 'backup')
  if (onPostgres !== undefined) return onPostgres
  try {
    const result = await backupSqlite({ dataDir: dataDirOf(values['data-dir']), out: values.out })
    io.stdout(
      JSON.stringify(
        {
          ...result,
          integrity: 'ok',
          ...(result.kek
            ? { note: `keep a copy of ${result.kek} apart from the backup: the keys open with it` }
            : {}),
        },
        null,
        2,
      ),
    )
    return 0
  } catch (error) {
    return refused(error, io, 'backup')
  }
}

/** `baton restore`: puts a backup back while no hub runs on the data directory. */
export async function restoreCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      from: { type: 'string' },
      'data-dir': { type: 'string' },
      kek: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  if (values.help) {
    io.stdout(RESTORE_USAGE)
    return 0
  }
  if (!values.from) throw new UsageError('restore needs --from FILE (see --help)')
  const onPostgres = refusedOnPostgres(io, 'restore')
  if (onPostgres !== undefined) return onPostgres
  try {
    const result = await restoreSqlite({
      from: values.from,
      dataDir: dataDirOf(values['data-dir']),
      kek: values.kek,
      hubKeySecret: process.env.BATON_HUB_KEY_SECRET || undefined,
    })
    io.stdout(JSON.stringify(result, null, 2))
    return 0
  } catch (error) {
    return refused(error, io, 'restore')
  }
}
