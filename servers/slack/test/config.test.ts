import { parseConfig } from '@keel-mcp/core'
import { describe, expect, it } from 'vitest'
import { options } from '../src/config.js'
import { server } from '../src/server.js'

const schemaOf = (spec: (typeof options)[keyof typeof options]) =>
  typeof spec.schema === 'function' ? spec.schema() : spec.schema

describe('the Slack options', () => {
  // An unset option takes its `unset` value without building its schema (core's OptionSpec).
  it.each(Object.keys(options))('%s: unset is what the schema gives for undefined', (key) => {
    const spec = options[key as keyof typeof options]
    expect('unset' in spec).toBe(true)
    expect(spec.unset).toEqual(schemaOf(spec).parse(undefined))
  })

  it('still check every value given, by flag or env var', () => {
    const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(server, argv, env)
    expect(() => parse(['--channels', 'Not A Channel'])).toThrow(
      'Invalid --channels (env SLACK_CHANNELS): must be channel ids or #names (0)',
    )
    expect(() => parse([], { SLACK_API_URL: 'not a url' })).toThrow(
      'Invalid env SLACK_API_URL: must be a URL',
    )
    expect(() => parse([], { SLACK_TEAM_ID: 'x' })).toThrow(
      'Invalid env SLACK_TEAM_ID: must be a workspace id like T0123',
    )
    expect(() => parse(['--workspace', 'Acme'])).toThrow(
      /^Invalid --workspace \(env SLACK_WORKSPACES\): must be NAME=/,
    )
    const outcome = parse(
      ['--workspace', 'acme=ACME_BOT:ACME_USER', '--allow-writes', '--write-channels', '#ops'],
      {
        SLACK_BOT_TOKEN: 'xoxb-config-test',
      },
    )
    if (outcome.kind !== 'config') throw new Error(`expected a config, got ${outcome.kind}`)
    expect(outcome.config.options).toMatchObject({
      botToken: 'xoxb-config-test',
      apiUrl: 'https://slack.com/api/',
      allowWrites: true,
      writeChannels: ['#ops'],
      channels: undefined,
      workspaces: [{ name: 'acme', botEnv: 'ACME_BOT', userEnv: 'ACME_USER' }],
    })
    expect(outcome.secrets).toContain('xoxb-config-test')
  })
})
