import { type AnyTool, ConfigError, type Logger, shapeOf, ToolError, z } from '@keel-mcp/core'
import { Directory } from './lib/directory.js'
import { defaultCacheDirectory, fileNameStore } from './lib/name-store.js'
import { type ClientOptions, createSlackApi, type SlackApi } from './lib/slack.js'
import type { SlackDeps, WorkspaceDeps } from './tools/shared.js'

/** What builds one workspace's deps. */
export interface WorkspaceSettings {
  name: string
  botToken: string | undefined
  userToken: string | undefined
  channelTypes: string
  nameCache: boolean
  client: ClientOptions
}

/** One workspace: its clients (created on first use) and its name directory (filled as calls need it). */
export function createWorkspace(settings: WorkspaceSettings, logger: Logger): WorkspaceDeps {
  const { botToken, userToken, client } = settings
  const bot: SlackApi | undefined = botToken ? createSlackApi(botToken, client) : undefined
  const user: SlackApi | undefined = userToken ? createSlackApi(userToken, client) : undefined
  const needBot = (): SlackApi => {
    if (!bot)
      throw new ToolError(
        'unauthenticated',
        `No Slack bot token is configured for workspace ${settings.name}`,
        {
          hint: 'Set SLACK_BOT_TOKEN (or the env var named by --workspace).',
        },
      )
    return bot
  }
  if (!botToken)
    logger.warn(`No bot token for workspace ${settings.name}: its calls will fail until one is set.`)
  const lazyBot: SlackApi = { apiCall: (method, args) => needBot().apiCall(method, args) }
  let self: Promise<{ userId: string; botId: string | undefined }> | undefined
  return {
    bot: needBot,
    user: () => user,
    directory: new Directory(lazyBot, settings.channelTypes, {
      store:
        settings.nameCache && botToken
          ? fileNameStore(defaultCacheDirectory(), client.apiUrl, botToken)
          : undefined,
    }),
    apiUrl: client.apiUrl,
    self() {
      self ??= needBot()
        .apiCall('auth.test')
        .then((response) => ({
          userId: String(response.user_id),
          botId: response.bot_id ? String(response.bot_id) : undefined,
        }))
      self.catch(() => {
        self = undefined
      })
      return self
    },
  }
}

/** The workspaces of `--workspace NAME=ENV[:USER_ENV]`, their tokens read from the environment. */
export function workspaceTokens(
  specs: Array<{ name: string; botEnv: string; userEnv: string | undefined }>,
  env: NodeJS.ProcessEnv,
  addSecret: (secret: string | undefined) => void,
): Array<{ name: string; botToken: string | undefined; userToken: string | undefined }> {
  const seen = new Set<string>()
  return specs.map((spec) => {
    if (seen.has(spec.name) || spec.name === 'default')
      throw new ConfigError(`--workspace ${spec.name}: the name is used twice (or is "default")`)
    seen.add(spec.name)
    const botToken = env[spec.botEnv] || undefined
    const userToken = spec.userEnv ? env[spec.userEnv] || undefined : undefined
    if (!botToken) throw new ConfigError(`--workspace ${spec.name}: the env var ${spec.botEnv} is not set`)
    addSecret(botToken)
    addSecret(userToken)
    return { name: spec.name, botToken, userToken }
  })
}

/**
 * Adds the `workspace` argument to every tool when the server serves more than one, and runs the
 * tool with that workspace's clients and names; the policy (allow lists, writes) is the server's
 * and applies in every workspace. With one workspace the tools are unchanged (no argument to pay for).
 */
export function withWorkspaces<T extends AnyTool<SlackDeps>>(tools: T[], names: string[]): T[] {
  if (names.length < 2) return tools
  // A plain string, checked here: the names are in the server's instructions once, not in every tool.
  let workspace: z.ZodType | undefined
  const workspaceArgument = () =>
    (workspace ??= z
      .string()
      .refine((value) => names.includes(value), `must be one of: ${names.join(', ')}`)
      .optional()
      .describe('Workspace'))
  // Built when first needed, as the tools' own shapes are.
  return tools.map((tool) => ({
    ...tool,
    input: () => ({ ...shapeOf(tool.input), workspace: workspaceArgument() }),
    run: (args: Record<string, unknown>, context: Parameters<T['run']>[1]) => {
      const { workspace: chosen, ...rest } = args
      const deps = (context.deps as SlackDeps & { select(name: unknown): SlackDeps }).select(chosen)
      return tool.run(rest as never, { ...context, deps })
    },
  }))
}
