import { parseArgs } from 'node:util'
import { createIdentity, loadIdentity, SignedClient, saveIdentity } from '@baton/client'
import { AgentLabel } from '@baton/protocol'
import { describe, type Io, UsageError } from './io.js'

const USAGE = `baton identity <command>

  init --hub <discovery-url> --out <file>   make an Ed25519 key and save it (mode 0600, never overwritten)
       [--name <label>]                     and the display label to give it (1 to 64 characters)
  show <file>                               print the principal and hub of an identity file (not the key)

The principal is a did:key derived from the public key. The first signed request enrols it; an
operator then approves it (baton admin), unless the hub runs in open admission. With --name, init
signs that first request itself: it gives the key its label on the hub at once (a pending key may
name itself, so the operator deciding on it sees the name). If the hub cannot be reached, the
file is kept and it says how to set the name later (baton me label).`

/** A word as a POSIX shell reads it back unchanged. */
const shellQuote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`

/** `baton identity init|show`: make and inspect agent identity files. */
export async function identityCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      hub: { type: 'string' },
      out: { type: 'string' },
      name: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  const [sub, ...rest] = positionals
  if (values.help || !sub) {
    io.stdout(USAGE)
    return values.help ? 0 : 64
  }
  switch (sub) {
    case 'init': {
      if (!values.hub) throw new UsageError('identity init needs --hub <discovery-url>')
      if (!values.out) throw new UsageError('identity init needs --out <file>')
      try {
        new URL(values.hub)
      } catch {
        throw new UsageError('--hub must be the absolute URL of the hub discovery document')
      }
      if (values.name !== undefined && !AgentLabel.safeParse(values.name).success) {
        throw new UsageError('--name must be 1 to 64 printable characters, no space at either end')
      }
      const identity = createIdentity(values.hub, new Date(), values.name)
      await saveIdentity(values.out, identity)
      let named: { labelSet: true; state: string } | { labelSet: false; why: string } | undefined
      if (identity.name !== undefined) {
        // The key's first signed request enrols it and names it, pending or admitted.
        named = await SignedClient.connect(values.hub, identity)
          .then((client) => client.setLabel(identity.name!))
          .then(
            (view) => ({ labelSet: true as const, state: view.state }),
            (error: unknown) => ({ labelSet: false as const, why: describe(error) }),
          )
      }
      io.stdout(
        JSON.stringify(
          {
            principal: identity.principal,
            hub: identity.hub,
            file: values.out,
            ...(identity.name === undefined ? {} : { name: identity.name, ...named }),
            ...(named?.labelSet === false
              ? {
                  setName: `baton me label --identity ${values.out} --label ${shellQuote(identity.name!)}`,
                }
              : {}),
          },
          null,
          2,
        ),
      )
      return 0
    }
    case 'show': {
      const file = rest[0]
      if (!file) throw new UsageError('identity show needs an identity file')
      const identity = await loadIdentity(file)
      io.stdout(
        JSON.stringify(
          {
            principal: identity.principal,
            hub: identity.hub,
            createdAt: identity.createdAt,
            ...(identity.name === undefined ? {} : { name: identity.name }),
          },
          null,
          2,
        ),
      )
      return 0
    }
    default:
      throw new UsageError(`unknown identity command ${JSON.stringify(sub)}\n\n${USAGE}`)
  }
}
