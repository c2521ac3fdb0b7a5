import { ToolError } from '@keel-mcp/core'
import { describe, expect, it } from 'vitest'
import { toToolError } from './errors.js'
import { QueryCancelledError, SqlRefusedError } from './lib/index.js'

const pgError = (code: string, message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, ...extra })

describe('toToolError', () => {
  it('maps a refusal of the parser gate to permission_denied with a hint and the reason', () => {
    const error = toToolError(new SqlRefusedError('not_read_only', 'Only read-only queries are allowed.'))
    expect(error).toMatchObject({
      kind: 'permission_denied',
      message: 'Only read-only queries are allowed.',
      hint: 'This server only runs read-only queries.',
      details: { reason: 'not_read_only' },
    })
  })

  it('points into the SQL when PostgreSQL gave a position', () => {
    const sql = 'SELECT *\n  FROM shop.nope'
    const error = toToolError(
      pgError('42P01', 'relation "shop.nope" does not exist', { position: '17' }),
      sql,
    )
    expect(error?.message).toBe(
      'relation "shop.nope" does not exist\nLINE 2:   FROM shop.nope\n               ^',
    )
    expect(error).toMatchObject({
      kind: 'not_found',
      hint: 'Call list_tables to see the tables that exist.',
      details: { reason: 'undefined_table', sqlstate: '42P01', position: 17 },
    })
  })

  it('gives the bare position when the SQL is not at hand', () => {
    const error = toToolError(pgError('42601', 'syntax error at or near "x"', { position: '8' }))
    expect(error?.message).toBe('syntax error at or near "x" (position 8)')
  })

  it('never echoes the user of a failed login', () => {
    const error = toToolError(pgError('28P01', 'password authentication failed for user "alice"'))
    expect(error?.kind).toBe('unauthenticated')
    expect(`${error?.message} ${error?.hint}`).not.toContain('alice')
  })

  it('maps a cancelled call to cancelled', () => {
    expect(toToolError(new QueryCancelledError())?.kind).toBe('cancelled')
  })

  it('keeps PostgreSQL errors of unknown classes, with their message', () => {
    expect(toToolError(pgError('XX000', 'cache lookup failed'))).toMatchObject({
      kind: 'internal',
      message: 'cache lookup failed',
    })
  })

  it('leaves unknown errors to core (a generic message with a log reference)', () => {
    expect(toToolError(new TypeError('x is undefined'))).toBeUndefined()
  })

  it('passes ToolErrors through', () => {
    const error = new ToolError('not_found', 'gone')
    expect(toToolError(error)).toBe(error)
  })
})
