// Interoperable signatures: a request signed by the `web-bot-auth` package (the Web Bot Auth
// profile: keyid the JWK thumbprint, tag, created and expires, @authority and Signature-Agent
// covered) is admitted by the hub once its key is enrolled, with the hub's nonce, replay and
// admission rules; a request @baton/client signs under that profile verifies with the package's
// verifier; and the hub's key directory is what the package's directory signer makes.
import assert from 'node:assert/strict'
import {
  createHash,
  createPublicKey,
  generateKeyPairSync,
  type JsonWebKey,
  verify as nodeVerify,
  sign,
} from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import {
  contentDigest,
  createIdentity,
  type Identity,
  jwkThumbprint,
  SignedClient,
  signRequest,
} from '@baton/client'
import { signDirectoryResponse } from '@baton/protocol'
import {
  directoryResponseHeaders,
  jwkToKeyID,
  signatureHeaders,
  verify as webBotAuthVerify,
} from 'web-bot-auth'
import { Ed25519Signer, helpers, signerFromJWK, verifierFromJWK } from 'web-bot-auth/crypto'
import { startTestHub, type TestHub, testStores } from './support.js'

const AGENT_DIRECTORY = 'https://agent.example'

/** Sends headers signed elsewhere to the hub exactly as they are. */
async function send(url: string, method: string, headers: Record<string, string>, body?: string) {
  const res = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

for (const store of testStores) {
  describe(`Web Bot Auth signatures (${store.name})`, () => {
    let hub: TestHub
    let agent: Identity

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
      agent = createIdentity(hub.url)
      // A key enrols by signing with its did:key; its thumbprint names it from then on.
      const client = await SignedClient.connect(`${hub.url}/.well-known/agent-net`, agent)
      assert.equal((await client.call<{ state: string }>('GET', '/v1/me')).state, 'approved')
    })
    after(() => hub?.close())

    /** The package signs a request to the hub with the agent's key. */
    async function packageSigned(
      method: string,
      path: string,
      extra: { components?: string[]; body?: string; key?: JsonWebKey } = {},
    ) {
      const url = `${hub.url}${path}`
      const headers: Record<string, string> = {
        'signature-agent': JSON.stringify(AGENT_DIRECTORY),
      }
      if (extra.body !== undefined) {
        headers['content-type'] = 'application/json'
        headers['content-digest'] = contentDigest(Buffer.from(extra.body))
      }
      const now = Date.now()
      const signer = await signerFromJWK(extra.key ?? (agent.privateKeyJwk as JsonWebKey))
      const signed = await signatureHeaders({ method, url, headers }, signer, {
        created: new Date(now),
        expires: new Date(now + 60_000),
        ...(extra.components ? { components: extra.components } : {}),
      })
      return { url, headers: { ...headers, ...signed } }
    }

    const covered = ['@method', '@target-uri', '@authority', 'signature-agent']

    test('a request the package signed is admitted as the enrolled principal', async () => {
      const req = await packageSigned('GET', '/v1/me', { components: covered })
      assert.match(req.headers['Signature-Input'], /tag="web-bot-auth"/)
      assert.match(
        req.headers['Signature-Input'],
        new RegExp(`keyid="${jwkThumbprint(agent.privateKey)}"`),
      )
      const res = await send(req.url, 'GET', req.headers)
      assert.equal(res.status, 200, JSON.stringify(res.body))
      assert.equal(res.body.principal, agent.principal)
      // The same signed request again is a replay: the nonce is spent as for any signature.
      const again = await send(req.url, 'GET', req.headers)
      assert.equal(again.status, 401)
      assert.equal(again.body.code, 'signature_replayed')
    })

    test('a write the package signed, with a covered Content-Digest, commits', async () => {
      const body = JSON.stringify({
        namespace: 'wba',
        kind: 'note/v1',
        data: { from: 'web-bot-auth' },
      })
      const req = await packageSigned('POST', '/v1/resources', {
        body,
        components: [...covered, 'content-digest', 'content-type'],
      })
      const res = await send(req.url, 'POST', req.headers, body)
      assert.equal(res.status, 201, JSON.stringify(res.body))
      assert.equal(res.body.owner, agent.principal)
    })

    test("the package's default components (@authority alone) are refused: Baton binds method and target", async () => {
      const req = await packageSigned('GET', '/v1/me')
      const res = await send(req.url, 'GET', req.headers)
      assert.equal(res.status, 401)
      assert.equal(res.body.code, 'signature_malformed')
      assert.equal(res.body.reason, 'components')
    })

    test('a key that never enrolled is key_not_enrolled, and enrols nothing', async () => {
      const { privateKey } = generateKeyPairSync('ed25519')
      const jwk = privateKey.export({ format: 'jwk' }) as JsonWebKey
      const req = await packageSigned('GET', '/v1/me', { components: covered, key: jwk })
      const res = await send(req.url, 'GET', req.headers)
      assert.equal(res.status, 401)
      assert.equal(res.body.code, 'key_not_enrolled')
      assert.equal(res.body.keyid, jwkThumbprint(privateKey))
    })

    test('a suspended key is refused under either profile', async () => {
      const other = createIdentity(hub.url)
      const client = await SignedClient.connect(`${hub.url}/.well-known/agent-net`, other)
      await client.call('GET', '/v1/me')
      await hub.ctx.identity.decide(other.principal, 'suspend')
      const req = await packageSigned('GET', '/v1/resources', {
        components: covered,
        key: other.privateKeyJwk as JsonWebKey,
      })
      const res = await send(req.url, 'GET', req.headers)
      assert.equal(res.status, 403)
      assert.equal(res.body.code, 'principal_suspended')
    })

    test("a request @baton/client signs under the profile verifies with the package's verifier, and the hub admits it", async () => {
      const url = `${hub.url}/v1/me`
      const signed = signRequest({
        method: 'GET',
        url,
        privateKey: agent.privateKey,
        keyid: agent.principal,
        profile: 'web-bot-auth',
        signatureAgent: AGENT_DIRECTORY,
      })
      const params = await webBotAuthVerify(
        { method: 'GET', url, headers: signed.headers },
        async (data, signature, p) => {
          await (await verifierFromJWK(agent.publicKeyJwk as JsonWebKey))(data, signature, p)
          return p
        },
      )
      assert.equal(params.tag, 'web-bot-auth')
      assert.equal(
        params.keyid,
        await jwkToKeyID(
          agent.publicKeyJwk as JsonWebKey,
          helpers.WEBCRYPTO_SHA256,
          helpers.BASE64URL_DECODE,
        ),
      )
      const res = await send(url, 'GET', signed.headers)
      assert.equal(res.status, 200, JSON.stringify(res.body))
      assert.equal(res.body.principal, agent.principal)
      // Baton's own profile carries no tag, so the package's verifier turns it away.
      const plain = signRequest({
        method: 'GET',
        url,
        privateKey: agent.privateKey,
        keyid: agent.principal,
      })
      await assert.rejects(
        webBotAuthVerify({ method: 'GET', url, headers: plain.headers }, async () => {}),
      )
    })

    test("the hub's key directory: a JWKS whose kid is the thumbprint, signed as the package signs one", async () => {
      const res = await fetch(`${hub.url}/.well-known/http-message-signatures-directory`)
      assert.equal(res.status, 200)
      assert.equal(
        res.headers.get('content-type'),
        'application/http-message-signatures-directory+json',
      )
      const directory = (await res.json()) as { keys: (JsonWebKey & { kid: string })[] }
      assert.equal(directory.keys.length, 1)
      const key = directory.keys[0]!
      const discovery = (await (await fetch(`${hub.url}/.well-known/agent-net`)).json()) as {
        hubKey: { x: string; kid: string }
      }
      assert.equal(key.x, discovery.hubKey.x)
      assert.equal(
        key.kid,
        await jwkToKeyID(key, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE),
      )
      // The answer's signature covers the authority asked, and verifies with the listed key.
      const input = res.headers.get('signature-input')!
      const sig = /^binding0=:([^:]+):$/.exec(res.headers.get('signature')!)![1]!
      const authority = new URL(hub.url).host
      const base = `"@authority";req: ${authority}\n"@signature-params": ${input.slice('binding0='.length)}`
      const publicKey = createPublicKey({
        key: { kty: 'OKP', crv: 'Ed25519', x: key.x },
        format: 'jwk',
      })
      assert.ok(nodeVerify(null, Buffer.from(base), publicKey, Buffer.from(sig, 'base64')))
      assert.match(input, /tag="http-message-signatures-directory"/)
      // The same fields, byte for byte, as the package's directory signer makes with one key.
      const { privateKey } = generateKeyPairSync('ed25519')
      const jwk = privateKey.export({ format: 'jwk' }) as JsonWebKey
      const signer = await Ed25519Signer.fromJWK(jwk)
      const created = new Date(1_796_000_000_000)
      const expires = new Date(1_796_086_400_000)
      const theirs = await directoryResponseHeaders(
        {
          request: {
            method: 'GET',
            url: `${hub.url}/.well-known/http-message-signatures-directory`,
            headers: {},
          },
          response: { status: 200, headers: {} },
        },
        [signer],
        { created, expires },
      )
      const ours = signDirectoryResponse(
        authority,
        { keyid: signer.keyid, created: 1_796_000_000, expires: 1_796_086_400 },
        (data) => sign(null, data, privateKey),
      )
      assert.equal(ours.signatureInput, theirs['Signature-Input'])
      assert.equal(ours.signature, theirs.Signature)
      assert.equal(
        signer.keyid,
        createHash('sha256')
          .update(`{"crv":"Ed25519","kty":"OKP","x":"${jwk.x}"}`)
          .digest('base64url'),
      )
    })
  })
}
