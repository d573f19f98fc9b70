export { MnemoClient, DEFAULT_BASE_URL } from "./client.js";
export type {
  AsOfOptions,
  CallOptions,
  DeleteOptions,
  Instant,
  MnemoClientOptions,
  ReviseOptions,
  TokenSource,
  WaitOptions,
} from "./client.js";
export {
  MnemoError,
  MnemoAuthError,
  MnemoNotFoundError,
  MnemoRateLimitError,
  MnemoValidationError,
  MnemoConflictError,
  MnemoGoneError,
  MnemoServerError,
  MnemoConnectionError,
} from "./errors.js";
export type { MnemoErrorInit } from "./errors.js";
export type { RetryOptions } from "./retry.js";
export { agentTurn, contentText, LlmError } from "./agent.js";
export type {
  AgentTurnOptions,
  AgentTurnResult,
  ChatCompletion,
  ChatContentPart,
  ChatMessage,
  LlmOptions,
} from "./agent.js";
export type * from "./types.js";
export type { components, operations, paths } from "./schema.js";
