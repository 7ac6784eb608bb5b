#!/usr/bin/env node
// The `baton` command, from the built JavaScript (`npm ci` builds it; `npm run build` again).
import { main } from '../dist/cli/main.js'

process.exitCode = await main(process.argv.slice(2))
