// Writes every route table the docs mark (`<!-- routes: … -->`) afresh from the contracts:
//   npm run docs
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fillRouteTables } from '../packages/hub/src/cli/route-tables.js'
import { docFiles } from '../packages/hub/test/doc-blocks.js'

const root = path.resolve(import.meta.dirname, '..')
for (const file of docFiles()) {
  const full = path.join(root, file)
  const text = readFileSync(full, 'utf8')
  const filled = fillRouteTables(text)
  if (filled !== text) {
    writeFileSync(full, filled)
    console.log(`wrote the route tables of ${file}`)
  }
}
