export { EnvHost } from "./env-host.ts";
export type { EnvHostOptions, ObservationFormat } from "./env-host.ts";
export { Session, SessionManager, ServeError } from "./sessions.ts";
export type { ResetRequest, ServeErrorCode, SessionManagerOptions, SessionView } from "./sessions.ts";
export { carriesToken, createServeApp, DEFAULT_BODY_LIMIT, startServer } from "./app.ts";
export type { RunningServer, ServeApp, ServeAppOptions } from "./app.ts";
export { handleMessage, observationData, openEnvRoutes, schemas, stateData } from "./openenv.ts";
export type { FieldError, OpenEnvObservation, WsReply } from "./openenv.ts";
export { OpenEnvSockets } from "./openenv-socket.ts";
