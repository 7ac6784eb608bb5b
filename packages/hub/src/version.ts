import { readFileSync } from 'node:fs'

// The package's own manifest is the one source of the version: it sits one folder above both
// `src/` (tests) and `dist/` (installed), and npm ships it in every tarball.
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string
}

/** The hub's version, reported by `baton --version`, in discovery, MCP and OpenAPI. */
export const VERSION: string = manifest.version
