import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { ComputeClient, fetchDiscovery, SignedClient } from '@baton/client'
import { type ComputeJobView, DISCOVERY_PATH } from '@baton/protocol'
import { discoveryCache } from './discovery-cache.js'
import { EXIT, type Io, UsageError } from './io.js'
import { continuing, traceOfCommand } from './trace.js'

/** The flags `compute run` takes beyond the generated command's: for completion and help. */
export const COMPUTE_RUN_FLAGS = ['--wait']

const HELP = `baton compute run <program.json|-> [--input in.json|-] [--wait] [flags]

Submits a compute job (json-expr-v1): the program from a file (or - for stdin), its input from
a file (or -). With --wait, long-polls the job until it ends, prints its output as JSON and exits
1 with the failure's code when it failed; progress goes to stderr.

  --input FILE|-          the job's input (JSON); default null
  --input-resource-id ID  the input is the data of a resource you may read
  --language L            default json-expr-v1
  --idempotency-key K     default a fresh one, so a repeat is a new job
  --wait                  wait until the job ends
  --hub URL, --identity FILE, --json
Without a program file, the generated command runs: baton compute run --program JSON …`

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

async function readJsonFile(source: string, what: string): Promise<unknown> {
  const text = source === '-' ? await readStdin() : await readFile(source, 'utf8')
  try {
    return JSON.parse(text)
  } catch {
    throw new UsageError(`${what}: ${source === '-' ? 'stdin' : source} is not JSON`)
  }
}

/**
 * `baton compute run program.json --input in.json --wait`. Answers undefined when the command
 * line is the generated command's (no program file, no --wait), which then runs as it is.
 */
export async function computeRunCommand(argv: string[], io: Io): Promise<number | undefined> {
  if (argv.includes('--help') || argv.includes('-h')) {
    if (!argv.includes('--wait') && !argv.some((a) => !a.startsWith('-'))) return undefined
    io.stdout(HELP)
    return EXIT.ok
  }
  const first = argv[0]
  const programFile = first !== undefined && (first === '-' || !first.startsWith('--'))
  if (!programFile && !argv.includes('--wait')) return undefined
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      input: { type: 'string' },
      'input-resource-id': { type: 'string' },
      language: { type: 'string' },
      program: { type: 'string' },
      'idempotency-key': { type: 'string' },
      wait: { type: 'boolean' },
      hub: { type: 'string' },
      identity: { type: 'string' },
      json: { type: 'boolean' },
    },
  })
  if (positionals.length > 1) throw new UsageError(`unexpected argument ${positionals[1]}`)
  let program: unknown
  if (positionals[0] !== undefined) program = await readJsonFile(positionals[0], 'program')
  else if (values.program !== undefined) {
    if (values.program.startsWith('@')) {
      program = await readJsonFile(values.program.slice(1), '--program')
    } else {
      try {
        program = JSON.parse(values.program)
      } catch {
        throw new UsageError('--program takes JSON (inline or @file)')
      }
    }
  } else throw new UsageError('compute run needs a program file (or --program JSON)')
  let input: unknown
  if (values.input !== undefined) {
    input = await readJsonFile(values.input.replace(/^@/, ''), '--input')
  }
  const hub = values.hub ?? process.env.BATON_HUB
  if (!hub) throw new UsageError('--hub URL is required (or set BATON_HUB)')
  const identity = values.identity ?? process.env.BATON_IDENTITY
  if (!identity) throw new UsageError('--identity FILE is required (or set BATON_IDENTITY)')
  // seed 000: live discovery before submitting compute, so it is revalidated, not taken as kept.
  const discovery = new URL(DISCOVERY_PATH, hub).href
  await fetchDiscovery(discovery, { cache: discoveryCache(), fresh: true })
  const client = await SignedClient.fromFile(discovery, identity)
  // The trace it is started in (TRACEPARENT, TRACESTATE), if any, continues at the hub.
  const compute = new ComputeClient(continuing(client, traceOfCommand(undefined)))
  let job: ComputeJobView = await compute.submit({
    language: values.language ?? 'json-expr-v1',
    program: program as never,
    ...(input !== undefined ? { input: input as never } : {}),
    ...(values['input-resource-id'] ? { inputResourceId: values['input-resource-id'] } : {}),
    idempotencyKey: values['idempotency-key'] ?? `cli-${randomBytes(12).toString('base64url')}`,
  })
  const json = values.json === true
  if (!values.wait) {
    io.stdout(json ? JSON.stringify(job) : JSON.stringify(job, null, 2))
    return EXIT.ok
  }
  job = await compute.wait(job.jobId, {
    onChange: (j) => io.stderr(`job ${j.jobId} ${j.state}`),
  })
  if (json) io.stdout(JSON.stringify(job))
  if (job.state === 'succeeded') {
    if (!json) io.stdout(JSON.stringify(job.output ?? null, null, 2))
    return EXIT.ok
  }
  const code = job.error?.code ?? job.state
  io.stderr(`baton compute run: job ${job.jobId} ${job.state}: ${code}`)
  return EXIT.refused
}
