export { RemoteEnv, RemoteEnvError, isEnvServerUrl, wsEndpoint, httpBase } from "./remote-env.ts";
export type { RemoteEnvOptions } from "./remote-env.ts";
export { remoteEnvInfo } from "./remote-info.ts";
export type { RemoteEnvInfo, RemoteInfoOptions } from "./remote-info.ts";
export { useRemoteEnv } from "./use-remote.ts";
export type { RemoteEnvHandle, UseRemoteOptions } from "./use-remote.ts";
