import { createHash } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import path from 'node:path'
import type { CachedDiscovery, DiscoveryCache } from '@baton/client/requests'

/**
 * Where `baton` keeps what it learns between commands: `BATON_CACHE_DIR`, else `baton` under
 * `XDG_CACHE_HOME`, else `~/.cache/baton`.
 */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BATON_CACHE_DIR) return env.BATON_CACHE_DIR
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'baton')
}

/**
 * Discovery documents kept between commands, one file per discovery URL, for as long as the
 * hub's `Cache-Control` says and then revalidated with its `ETag` (the SDK's `fetchDiscovery`
 * decides; this only keeps). A file that cannot be read or written is as good as none: the
 * command asks the hub, as it would without a cache.
 */
export function discoveryCache(dir: string = cacheDir()): DiscoveryCache {
  const fileOf = (url: string) =>
    path.join(
      dir,
      'discovery',
      `${createHash('sha256').update(url).digest('base64url').slice(0, 32)}.json`,
    )
  return {
    async get(url) {
      try {
        const kept = JSON.parse(await readFile(fileOf(url), 'utf8')) as CachedDiscovery & {
          url?: string
        }
        return kept.url === url ? kept : undefined
      } catch {
        return undefined
      }
    },
    async set(url, entry) {
      const file = fileOf(url)
      // Written whole then renamed, so a command running beside this one never reads half a file.
      const partial = `${file}.${process.pid}.tmp`
      try {
        await mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
        await writeFile(partial, JSON.stringify({ url, ...entry }), { mode: 0o600 })
        await rename(partial, file)
      } catch {
        // Not kept: the next command asks the hub.
      }
    },
  }
}
