import { readdirSync } from 'node:fs'
import path from 'node:path'

/** Every TypeScript source file under `dir` but the tests, for the structure checks. */
export function sourcesOf(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) sourcesOf(full, out)
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) out.push(full)
  }
  return out
}
