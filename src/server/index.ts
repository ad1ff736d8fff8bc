export { EnvHost } from "./env-host.ts";
export type { EnvHostOptions, ObservationFormat } from "./env-host.ts";
export { Session, SessionManager, ServeError } from "./sessions.ts";
export type { ResetRequest, ServeErrorCode, SessionManagerOptions, SessionView } from "./sessions.ts";
export { agentGymRoutes } from "./agentgym.ts";
