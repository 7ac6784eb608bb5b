import type { AdmissionCarry, Principal } from './service.js'

/** What the signature hook proved of a signed, admitted request, put on it once (`req.signed`). */
export interface SignedCaller {
  /** The verified principal. */
  principal: Principal
  /**
   * The request's pending admission (nonce, quota charge, a new key's enrolment), for a route
   * that carries it into its own first write (`carriesAdmission`), settled before the answer.
   */
  carry?: AdmissionCarry | undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed caller, once the signature hook admitted the request; null otherwise. */
    signed: SignedCaller | null
  }
}
