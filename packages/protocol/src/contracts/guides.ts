import { z } from 'zod'
import { defineContract } from '../contract.js'

const tags = ['guides']
const Summary = z.object({ name: z.string(), title: z.string() })

export const listGuides = defineContract({
  name: 'listGuides',
  summary: 'The hub’s public guides (README and docs), by name and title',
  tags,
  method: 'GET',
  path: '/guides',
  auth: 'none',
  output: z.object({ guides: z.array(Summary) }),
  errors: [],
  tool: {
    name: 'list_guides',
    title: 'List the hub guides',
    description:
      'The hub’s own guides: the README tour, signed requests, handoffs, transfers, compute, errors.',
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
})

export const searchGuides = defineContract({
  name: 'searchGuides',
  summary: 'Guides holding every word of q, with matching lines',
  tags,
  method: 'GET',
  path: '/guides/search',
  auth: 'none',
  query: z.strictObject({
    q: z.string().max(200).regex(/\S/, 'at least one word').describe('Words to look for'),
  }),
  output: z.object({
    results: z.array(Summary.extend({ matches: z.array(z.string()) })),
  }),
  errors: [],
  tool: {
    name: 'search_guides',
    title: 'Search the hub guides',
    description: 'Find the guides that mention every word of q, with the lines that match.',
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
})

export const readGuide = defineContract({
  name: 'readGuide',
  summary: 'One guide’s Markdown text',
  tags,
  method: 'GET',
  path: '/guides/:name',
  auth: 'none',
  params: z.strictObject({ name: z.string().max(64).describe('The guide name, from listGuides') }),
  output: Summary.extend({ markdown: z.string() }),
  errors: ['not_found'],
  tool: {
    name: 'read_guide',
    title: 'Read a hub guide',
    description: 'Read one of the hub’s guides as Markdown, by the name list_guides gives.',
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
})

/** Every guide contract; all open to anonymous callers, none writes. */
export const guideContracts = [listGuides, searchGuides, readGuide]
