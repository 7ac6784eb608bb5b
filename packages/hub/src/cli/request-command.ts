import { readFile } from 'node:fs/promises'
import { fetchDiscovery, loadIdentity, sendSigned } from '@baton/client/requests'
import { discoveryCache } from './discovery-cache.js'
import { EXIT, type Io, UsageError } from './io.js'
import { traceHeaders, traceOfCommand } from './trace.js'

const USAGE = `baton request <discovery-url> <identity-file> METHOD PATH [body-file]

Sends one request signed with the identity (RFC 9421, ed25519, a fresh nonce each call) to the
hub the discovery document describes. PATH is sent exactly as given, query and percent-encoding
included, e.g. "/v1/messages?after=0&limit=20". The body file's bytes are sent unchanged as
application/json. Prints the answer as JSON on stdout and "HTTP <status>" on stderr; exits 0 for
2xx, 1 for 4xx, 2 for 5xx or a network failure. A 429 whose Retry-After is at most 5 seconds is
retried once, signed afresh. With TRACEPARENT (and TRACESTATE) set, the request continues that
W3C trace.`

const METHOD = /^(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)$/

/** `baton request`: the seed 000 signing client, argument for argument. */
export async function requestCommand(argv: string[], io: Io): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout(USAGE)
    return 0
  }
  if (argv.length < 4 || argv.length > 5)
    throw new UsageError(`expected 4 or 5 arguments\n\n${USAGE}`)
  const [discoveryUrl, identityFile, rawMethod, path, bodyFile] = argv as [
    string,
    string,
    string,
    string,
    string | undefined,
  ]
  const method = rawMethod.toUpperCase()
  if (!METHOD.test(method)) throw new UsageError(`unknown method ${JSON.stringify(rawMethod)}`)
  if (!path.startsWith('/')) throw new UsageError('PATH must start with /, e.g. /v1/me')
  let body: Uint8Array | undefined
  if (bodyFile !== undefined) {
    try {
      body = await readFile(bodyFile)
    } catch (error) {
      throw new UsageError(`cannot read ${bodyFile}: ${(error as Error).message}`)
    }
  }
  // SignedClient.fromFile's steps, with discovery kept between commands as the hub allows.
  const signer = {
    identity: await loadIdentity(identityFile),
    discovery: await fetchDiscovery(discoveryUrl, { cache: discoveryCache() }),
    options: {},
  }
  // The trace it is started in (TRACEPARENT, TRACESTATE), if any, continues at the hub.
  const answer = await sendSigned(
    signer,
    method,
    path,
    body,
    traceHeaders(traceOfCommand(undefined)),
  )
  if (answer.body !== undefined) io.stdout(JSON.stringify(answer.body, null, 2))
  io.stderr(`HTTP ${answer.status}`)
  if (answer.status >= 500) return EXIT.failed
  if (answer.status >= 300) return EXIT.refused
  return EXIT.ok
}
