import pino, { type Logger } from 'pino'

/** Structured JSON logs; secrets never reach them (authorization headers are redacted). */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'baton-hub' },
      redact: ['req.headers.authorization', 'headers.authorization', '*.token', '*.owner_token'],
    },
    destination,
  )
}
