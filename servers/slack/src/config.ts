import { type OptionSpecs, z } from '@keel-mcp/core'

/** The Slack server's own options (the common flags come from core). */
export interface SlackOptions {
  botToken: string | undefined
  userToken: string | undefined
  teamId: string | undefined
  apiUrl: string
  allowWrites: boolean
  allowBroadcast: boolean
  writeChannels: string[] | undefined
  channels: string[] | undefined
  excludeChannels: string[] | undefined
  includePrivate: boolean
  includeDms: boolean
  uploadDir: string | undefined
  nameCache: boolean
  workspaces: Array<{ name: string; botEnv: string; userEnv: string | undefined }>
}

// Schemas are built on the first value to check (core's OptionSpec): a start without the option
// takes its `unset` value and builds nothing (test/config.test.ts holds each to its schema).
const channelList = () =>
  z
    .array(z.string().regex(/^#?[a-z0-9._-]{1,80}$|^[CGD][A-Z0-9]{2,}$/, 'must be channel ids or #names'))
    .min(1)

const workspaceSpec = () =>
  z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9_-]{0,31}=[A-Z_][A-Z0-9_]*(:[A-Z_][A-Z0-9_]*)?$/,
      'must be NAME=BOT_TOKEN_ENV or NAME=BOT_TOKEN_ENV:USER_TOKEN_ENV (e.g. acme=ACME_SLACK_BOT_TOKEN)',
    )
    .transform((value) => {
      const [name, envs] = value.split('=') as [string, string]
      const [botEnv, userEnv] = envs.split(':') as [string, string | undefined]
      return { name, botEnv, userEnv }
    })

export const options: OptionSpecs<SlackOptions> = {
  botToken: {
    flag: 'bot-token',
    env: 'SLACK_BOT_TOKEN',
    type: 'string',
    placeholder: 'xoxb-…',
    secret: true,
    description: 'Bot token (prefer the env var: argv shows in process lists).',
    schema: () => z.string().min(1).max(500).optional(),
    unset: undefined,
  },
  userToken: {
    flag: 'user-token',
    env: 'SLACK_USER_TOKEN',
    type: 'string',
    placeholder: 'xoxp-…',
    secret: true,
    description: 'User token: enables search_messages, list_unreads and mark_read (they act as a person).',
    schema: () => z.string().min(1).max(500).optional(),
    unset: undefined,
  },
  teamId: {
    flag: 'team-id',
    env: 'SLACK_TEAM_ID',
    type: 'string',
    placeholder: 'T…',
    description: 'Workspace id, for org-wide tokens.',
    schema: () =>
      z
        .string()
        .regex(/^[TE][A-Z0-9]+$/, 'must be a workspace id like T0123')
        .optional(),
    unset: undefined,
  },
  apiUrl: {
    flag: 'api-url',
    env: 'SLACK_API_URL',
    type: 'string',
    placeholder: 'url',
    description: 'Web API root (default https://slack.com/api/; GovSlack: https://slack-gov.com/api/).',
    schema: () => z.string().url('must be a URL').default('https://slack.com/api/'),
    unset: 'https://slack.com/api/',
  },
  allowWrites: {
    flag: 'allow-writes',
    env: 'SLACK_ALLOW_WRITES',
    type: 'boolean',
    description:
      'Offer the writing tools (post, reply, react, edit and delete own messages). Off by default.',
    schema: () => z.boolean().default(false),
    unset: false,
  },
  allowBroadcast: {
    flag: 'allow-broadcast',
    env: 'SLACK_ALLOW_BROADCAST',
    type: 'boolean',
    description:
      'With --allow-writes: let posts notify whole channels or groups (<!channel>, <!here>, <!everyone>, <!group>, <!subteam^…>). Escaped otherwise.',
    schema: () => z.boolean().default(false),
    unset: false,
  },
  writeChannels: {
    flag: 'write-channels',
    env: 'SLACK_WRITE_CHANNELS',
    type: 'string',
    multiple: true,
    placeholder: 'a,b',
    description: 'With --allow-writes: only these channels (ids or #names) may be written to.',
    schema: () => channelList().optional(),
    unset: undefined,
  },
  channels: {
    flag: 'channels',
    env: 'SLACK_CHANNELS',
    type: 'string',
    multiple: true,
    placeholder: 'a,b',
    description: 'Only these channels (ids or #names) can be read.',
    schema: () => channelList().optional(),
    unset: undefined,
  },
  excludeChannels: {
    flag: 'exclude-channels',
    env: 'SLACK_EXCLUDE_CHANNELS',
    type: 'string',
    multiple: true,
    placeholder: 'a,b',
    description: 'These channels can never be read or written.',
    schema: () => channelList().optional(),
    unset: undefined,
  },
  includePrivate: {
    flag: 'include-private',
    env: 'SLACK_INCLUDE_PRIVATE',
    type: 'boolean',
    description: 'Also list and read private channels the token is in.',
    schema: () => z.boolean().default(false),
    unset: false,
  },
  includeDms: {
    flag: 'include-dms',
    env: 'SLACK_INCLUDE_DMS',
    type: 'boolean',
    description: 'Also list and read direct messages the token is in.',
    schema: () => z.boolean().default(false),
    unset: false,
  },
  uploadDir: {
    flag: 'upload-dir',
    env: 'SLACK_UPLOAD_DIR',
    type: 'string',
    placeholder: 'dir',
    description: 'With --allow-writes: upload_file may send files from this directory only.',
    schema: () => z.string().min(1).optional(),
    unset: undefined,
  },
  nameCache: {
    flag: 'name-cache',
    env: 'SLACK_NAME_CACHE',
    type: 'boolean',
    description: 'Keep learnt user and channel names under the user cache directory across restarts.',
    schema: () => z.boolean().default(false),
    unset: false,
  },
  workspaces: {
    flag: 'workspace',
    env: 'SLACK_WORKSPACES',
    type: 'string',
    multiple: true,
    placeholder: 'name=ENV',
    description:
      'Another workspace: its name and the env var holding its bot token (NAME=BOT_ENV[:USER_ENV]). Repeatable; tools then take workspace.',
    schema: () => z.array(workspaceSpec()).default([]),
    unset: [],
  },
}

export const helpFooter = `Environment:
  SLACK_BOT_TOKEN    xoxb-… bot token (scopes per tool: see the README)
  SLACK_USER_TOKEN   xoxp-… user token, for search_messages, list_unreads and mark_read
  SLACK_API_URL      Web API root (tests, GovSlack)
  --workspace acme=ACME_BOT_TOKEN   a further workspace; its token is read from that env var

Reads cover public channels by default; writes are off unless --allow-writes, and then limited to
--write-channels when given. --read-only removes every writing tool, whatever else was asked.`
