import { describe, expect, it } from 'vitest'
import {
  classifyPgError,
  type ErrorKind,
  isConnectionError,
  QueryCancelledError,
  QueryTimeoutError,
  redactConnectionString,
  SqlRefusedError,
} from './errors.js'

/** The shape node-postgres gives a server error (DatabaseError): message plus protocol fields. */
const pgError = (code: string, message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, severity: 'ERROR', ...extra })

const errno = (code: string, message: string) => Object.assign(new Error(message), { code })

describe('classifyPgError', () => {
  it.each<[string, unknown, ErrorKind, string]>([
    [
      '42601 syntax error',
      pgError('42601', 'syntax error at or near "FORM"', { position: '10' }),
      'invalid_argument',
      'syntax_error',
    ],
    [
      '42P01 undefined table',
      pgError('42P01', 'relation "nope" does not exist'),
      'not_found',
      'undefined_table',
    ],
    [
      '42703 undefined column',
      pgError('42703', 'column "nope" does not exist'),
      'not_found',
      'undefined_column',
    ],
    [
      '42883 undefined function',
      pgError('42883', 'function nope() does not exist'),
      'not_found',
      'undefined_function',
    ],
    [
      '25006 read-only transaction',
      pgError('25006', 'cannot execute CREATE TABLE in a read-only transaction'),
      'permission_denied',
      'read_only_transaction',
    ],
    [
      '42501 insufficient privilege',
      pgError('42501', 'permission denied for table orders'),
      'permission_denied',
      'insufficient_privilege',
    ],
    [
      '57014 statement timeout',
      pgError('57014', 'canceling statement due to statement timeout'),
      'timeout',
      'statement_timeout',
    ],
    [
      '57014 user request',
      pgError('57014', 'canceling statement due to user request'),
      'cancelled',
      'query_cancelled',
    ],
    [
      '55P03 lock timeout',
      pgError('55P03', 'canceling statement due to lock timeout'),
      'timeout',
      'lock_timeout',
    ],
    [
      '28P01 bad password',
      pgError('28P01', 'password authentication failed for user "alice"'),
      'unauthenticated',
      'authentication_failed',
    ],
    [
      '28000 no such role',
      pgError('28000', 'role "alice" does not exist'),
      'unauthenticated',
      'authentication_failed',
    ],
    [
      '57P01 admin shutdown',
      pgError('57P01', 'terminating connection due to administrator command'),
      'unavailable',
      'admin_shutdown',
    ],
    [
      '57P03 cannot connect now',
      pgError('57P03', 'the database system is starting up'),
      'unavailable',
      'admin_shutdown',
    ],
    ['08006 connection failure', pgError('08006', 'connection failure'), 'unavailable', 'connection_failed'],
    [
      '53300 too many connections',
      pgError('53300', 'sorry, too many clients already'),
      'unavailable',
      'insufficient_resources',
    ],
    ['53200 out of memory', pgError('53200', 'out of memory'), 'unavailable', 'insufficient_resources'],
    ['22012 division by zero', pgError('22012', 'division by zero'), 'invalid_argument', 'data_exception'],
    [
      '22P02 invalid text representation',
      pgError('22P02', 'invalid input syntax for type integer: "x"'),
      'invalid_argument',
      'data_exception',
    ],
    [
      '23505 unique violation',
      pgError('23505', 'duplicate key value violates unique constraint'),
      'conflict',
      'integrity_violation',
    ],
    [
      '42P02 missing parameter',
      pgError('42P02', 'there is no parameter $1'),
      'invalid_argument',
      'undefined_parameter',
    ],
    [
      '08P01 missing bind parameter',
      pgError('08P01', 'bind message supplies 0 parameters, but prepared statement "" requires 1'),
      'invalid_argument',
      'undefined_parameter',
    ],
    [
      '42804 datatype mismatch',
      pgError('42804', 'argument of WHERE must be type boolean'),
      'invalid_argument',
      'invalid_sql',
    ],
    ['XX000 internal', pgError('XX000', 'cache lookup failed'), 'internal', 'internal'],
    ['0A000 feature not supported', pgError('0A000', 'cannot do that'), 'invalid_argument', 'invalid_sql'],
    [
      'ECONNREFUSED',
      errno('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:5432'),
      'unavailable',
      'connection_failed',
    ],
    [
      'ENOTFOUND',
      errno('ENOTFOUND', 'getaddrinfo ENOTFOUND db.internal.example'),
      'unavailable',
      'connection_failed',
    ],
    ['ECONNRESET', errno('ECONNRESET', 'read ECONNRESET'), 'unavailable', 'connection_failed'],
    [
      'connection terminated',
      new Error('Connection terminated unexpectedly'),
      'unavailable',
      'connection_failed',
    ],
    [
      'pool connect timeout',
      new Error('timeout exceeded when trying to connect'),
      'unavailable',
      'connection_failed',
    ],
    [
      'guard refusal: not read-only',
      new SqlRefusedError('not_read_only', 'no'),
      'permission_denied',
      'not_read_only',
    ],
    [
      'guard refusal: multiple statements',
      new SqlRefusedError('multiple_statements', 'no'),
      'invalid_argument',
      'multiple_statements',
    ],
    [
      'guard refusal: syntax',
      new SqlRefusedError('syntax_error', 'no', 3),
      'invalid_argument',
      'syntax_error',
    ],
    ['client-side timeout', new QueryTimeoutError(1000), 'timeout', 'statement_timeout'],
    ['caller abort', new QueryCancelledError(), 'cancelled', 'query_cancelled'],
    ['unknown error', new Error('something odd'), 'internal', 'internal'],
    ['not an error at all', 'a string', 'internal', 'internal'],
  ])('maps %s', (_label, error, kind, reason) => {
    expect(classifyPgError(error)).toMatchObject({ kind, reason })
  })

  it('keeps the position of a syntax error', () => {
    expect(classifyPgError(pgError('42601', 'syntax error', { position: '17' })).position).toBe(17)
    expect(classifyPgError(new SqlRefusedError('syntax_error', 'x', 5)).position).toBe(5)
  })

  it('hints at list_tables for an unknown table and describe_table for an unknown column', () => {
    expect(classifyPgError(pgError('42P01', 'relation "x" does not exist')).hint).toContain('list_tables')
    expect(classifyPgError(pgError('42703', 'column "x" does not exist')).hint).toContain('describe_table')
  })

  it('never echoes user names, hosts or passwords from authentication and connection errors', () => {
    const secrets = ['alice', 'hunter2', '10.0.0.5', 'db.internal.example']
    for (const error of [
      pgError('28P01', 'password authentication failed for user "alice" (password hunter2)'),
      pgError('28000', 'no pg_hba.conf entry for host "10.0.0.5", user "alice", database "x"'),
      errno('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:5432'),
      errno('ENOTFOUND', 'getaddrinfo ENOTFOUND db.internal.example'),
      new Error('Connection terminated unexpectedly for postgres://alice:hunter2@10.0.0.5/x'),
    ]) {
      const { message, hint } = classifyPgError(error)
      for (const secret of secrets) {
        expect(message).not.toContain(secret)
        expect(hint ?? '').not.toContain(secret)
      }
    }
  })

  it('passes the SQLSTATE on for server errors', () => {
    expect(classifyPgError(pgError('42P01', 'x')).sqlstate).toBe('42P01')
    expect(classifyPgError(errno('ECONNREFUSED', 'x')).sqlstate).toBeUndefined()
  })
})

describe('isConnectionError', () => {
  it('recognises dropped and refused connections but not statement errors', () => {
    expect(isConnectionError(pgError('57P01', 'terminating connection'))).toBe(true)
    expect(isConnectionError(errno('ECONNRESET', 'read ECONNRESET'))).toBe(true)
    expect(
      isConnectionError(new Error('Client has encountered a connection error and is not queryable')),
    ).toBe(true)
    expect(isConnectionError(pgError('42P01', 'relation does not exist'))).toBe(false)
    expect(isConnectionError(null)).toBe(false)
  })
})

describe('redactConnectionString', () => {
  it.each([
    ['postgres://alice:hunter2@db:5432/app', 'postgres://alice:***@db:5432/app'],
    ['postgresql://alice:p%40ss@db/app?sslmode=require', 'postgresql://alice:***@db/app?sslmode=require'],
    ['postgres://alice:p@ss@db/app', 'postgres://alice:***@db/app'],
    ['postgres://:only-password@db/app', 'postgres://:***@db/app'],
    ['postgres://alice@db/app', 'postgres://alice@db/app'],
    ['postgres://db/app?password=hunter2&user=alice', 'postgres://db/app?password=***&user=alice'],
    ['host=db user=alice password=hunter2 dbname=app', 'host=db user=alice password=*** dbname=app'],
    ["host=db password='hunter 2' dbname=app", 'host=db password=*** dbname=app'],
    ['sslpassword=keypass', 'sslpassword=***'],
    [
      'error for postgres://bob:s3cret@x/y and PASSWORD = abc',
      'error for postgres://bob:***@x/y and PASSWORD = ***',
    ],
    ['no secrets here', 'no secrets here'],
  ])('redacts %s', (input, expected) => {
    expect(redactConnectionString(input)).toBe(expected)
  })
})
