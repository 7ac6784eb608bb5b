import { BatonError } from '@baton/protocol'
import type { Caller } from './operation.js'

/** The verified principal of a `signature` operation's caller; every face sets it first. */
export function signer(caller: Pick<Caller, 'principal'>): string {
  if (!caller.principal) {
    throw new BatonError('signature_missing', 'This operation needs a signed request')
  }
  return caller.principal.principal
}
