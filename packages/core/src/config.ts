// The command line of every Keel server, in five rooms (src/config/): what a configuration is
// (types.ts), the common flag table (flags.ts), parsing argv and env (parse.ts), validation
// (validate.ts) and the `--help` text (help.ts). This module is their public face.

export type { CommonFlagName } from './config/flags.js'
export { helpText } from './config/help.js'
export { parseConfig } from './config/parse.js'
export {
  type CommonConfig,
  ConfigError,
  type ConfigSource,
  type OptionSpec,
  type OptionSpecs,
  type ParsedConfig,
  type ParseOutcome,
  type PositionalSpec,
} from './config/types.js'
export { COMMON_SETTINGS, isLoopback, validateSettings } from './config/validate.js'
