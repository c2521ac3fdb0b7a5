import { ToolError } from '@keel-mcp/core'
import { SlackError } from './lib/slack.js'

const hints: Record<string, { kind: ConstructorParameters<typeof ToolError>[0]; hint?: string }> = {
  invalid_auth: { kind: 'unauthenticated', hint: 'Check SLACK_BOT_TOKEN (and SLACK_USER_TOKEN for search).' },
  not_authed: { kind: 'unauthenticated', hint: 'Set SLACK_BOT_TOKEN.' },
  account_inactive: { kind: 'unauthenticated', hint: 'The token belongs to a deactivated user or app.' },
  token_revoked: { kind: 'unauthenticated', hint: 'Issue a new token.' },
  token_expired: { kind: 'unauthenticated', hint: 'Issue a new token.' },
  missing_scope: { kind: 'permission_denied' },
  not_allowed_token_type: {
    kind: 'permission_denied',
    hint: 'This call needs the other kind of token (bot or user).',
  },
  channel_not_found: {
    kind: 'not_found',
    hint: 'Check the id, or find it with find_channel / list_channels.',
  },
  user_not_found: { kind: 'not_found', hint: 'Check the id, or find it with find_user / list_users.' },
  message_not_found: {
    kind: 'not_found',
    hint: 'Check the channel and ts (get_channel_history lists them).',
  },
  thread_not_found: { kind: 'not_found', hint: 'Check thread_ts: the ts of the thread’s first message.' },
  not_in_channel: { kind: 'permission_denied', hint: 'Invite the bot to the channel (/invite @bot) first.' },
  is_archived: { kind: 'conflict', hint: 'The channel is archived: it cannot be written to.' },
  msg_too_long: {
    kind: 'invalid_argument',
    hint: 'Shorten the message (Slack takes at most 40,000 characters).',
  },
  no_text: { kind: 'invalid_argument', hint: 'Give the message some text.' },
  already_reacted: { kind: 'conflict', hint: 'That reaction is already there.' },
  invalid_name: { kind: 'invalid_argument', hint: 'Use an emoji name without colons, e.g. thumbsup.' },
  cant_update_message: { kind: 'permission_denied', hint: 'Only the bot’s own messages can be edited.' },
  cant_delete_message: { kind: 'permission_denied', hint: 'Only the bot’s own messages can be deleted.' },
  edit_window_closed: { kind: 'conflict', hint: 'The workspace no longer allows editing this message.' },
  not_scheduled_message: { kind: 'not_found', hint: 'list_scheduled_messages shows the ids.' },
  time_in_past: { kind: 'invalid_argument', hint: 'post_at must be in the future.' },
  time_too_far: { kind: 'invalid_argument', hint: 'post_at must be within 120 days.' },
  file_not_found: { kind: 'not_found', hint: 'Check the id (list_files lists them).' },
  canvas_not_found: { kind: 'not_found', hint: 'Check the canvas id.' },
  canvas_editing_failed: { kind: 'conflict', hint: 'Read the canvas again and retry.' },
  user_not_in_channel: { kind: 'permission_denied', hint: 'The user is not in that channel.' },
  invalid_cursor: { kind: 'invalid_argument', hint: 'Use the cursor the previous page returned.' },
  ratelimited: { kind: 'rate_limited' },
  request_error: { kind: 'unavailable', hint: 'Slack could not be reached; try again.' },
  http_error: { kind: 'unavailable', hint: 'Slack had a server error; try again later.' },
  invalid_response: {
    kind: 'unavailable',
    hint: 'Slack sent an answer that is not Web API JSON; try again later.',
  },
  fatal_error: { kind: 'unavailable', hint: 'Slack had a server error; try again later.' },
  internal_error: { kind: 'unavailable', hint: 'Slack had a server error; try again later.' },
  service_unavailable: { kind: 'unavailable', hint: 'Slack is unavailable; try again later.' },
}

/** What the model reads when a write failed in a way that does not say whether Slack applied it. */
export const UNCONFIRMED_HINT =
  'Slack did not confirm this write, and it may have been applied. This server sent it once and ' +
  'did not repeat it: look before calling again (get_channel_history, get_thread_replies or ' +
  'list_scheduled_messages show what was posted or scheduled).'

/** Maps Slack's `ok: false` codes and client failures to the error the model reads. No token, ever. */
export function toToolError(error: unknown): ToolError | undefined {
  if (ToolError.is(error)) return error
  if (!(error instanceof SlackError)) return undefined
  // Refusals of the server's own (upload directory, file hosts): their message is the explanation.
  if (error.error === 'upload_refused' || error.error === 'file_host_refused') {
    return new ToolError('permission_denied', error.message, { cause: error })
  }
  // A write Slack may have applied: none of the hints below (they say to try again) fits it.
  if (error.details.unconfirmed) {
    return new ToolError('unavailable', `Slack: ${error.error}`, {
      hint: UNCONFIRMED_HINT,
      details: { slack: error.error, unconfirmed: true },
      cause: error,
    })
  }
  const known = hints[error.error] ?? { kind: 'internal' as const }
  let hint = known.hint
  if (error.error === 'missing_scope') {
    hint = error.details.needed
      ? `The token lacks the scope "${error.details.needed}": add it to the Slack app and reinstall it.`
      : 'The token lacks a scope this call needs (see the README’s scopes table).'
  }
  if (error.error === 'ratelimited') {
    const { retryAfterSeconds: after, retryAt } = error.details
    // Slack's own wait, and when this server asks Slack again (its back-off is capped: a long
    // Retry-After never keeps a recovered API unused for long).
    hint =
      after === undefined
        ? 'Wait and retry.'
        : `Slack asks to wait ${after} s (until ${new Date(Date.now() + after * 1000).toISOString()})` +
          (retryAt === undefined
            ? '.'
            : `; this server tries Slack again after ${new Date(retryAt).toISOString()}.`)
  }
  const kind = known.kind === 'internal' ? 'invalid_argument' : known.kind
  return new ToolError(kind, `Slack: ${error.error}`, {
    ...(hint ? { hint } : {}),
    details: {
      slack: error.error,
      ...(error.details.retryAfterSeconds === undefined
        ? {}
        : { retryAfterSeconds: error.details.retryAfterSeconds }),
    },
    cause: error,
  })
}
