//! Wire names shared by the servers and the clients of this workspace, so that the
//! two sides cannot drift apart.

/// MCP names (both task generations).
pub mod mcp {
    /// Method names.
    pub mod method {
        /// `server/discover` (2026-07-28).
        pub const DISCOVER: &str = "server/discover";
        /// `initialize` (2025-11-25 and older).
        pub const INITIALIZE: &str = "initialize";
        /// `notifications/initialized` (2025-11-25 and older).
        pub const INITIALIZED: &str = "notifications/initialized";
        /// `ping` (2025-11-25 and older).
        pub const PING: &str = "ping";
        /// `tools/list`.
        pub const TOOLS_LIST: &str = "tools/list";
        /// `tools/call`.
        pub const TOOLS_CALL: &str = "tools/call";
        /// `tasks/get`.
        pub const TASKS_GET: &str = "tasks/get";
        /// `tasks/update` (SEP-2663).
        pub const TASKS_UPDATE: &str = "tasks/update";
        /// `tasks/cancel`.
        pub const TASKS_CANCEL: &str = "tasks/cancel";
        /// `tasks/continue` (SEP-2339, Task Continuity).
        pub const TASKS_CONTINUE: &str = "tasks/continue";
        /// `tasks/stream` (SEP-2694, Resumable Task Event Streams): starts or
        /// resumes a task's event stream.
        pub const TASKS_STREAM: &str = "tasks/stream";
        /// `notifications/tasks/event` (SEP-2694): one event of a `tasks/stream`.
        pub const NOTIFY_TASKS_EVENT: &str = "notifications/tasks/event";
        /// `tasks/result` (2025-11-25 only).
        pub const TASKS_RESULT: &str = "tasks/result";
        /// `tasks/list` (2025-11-25 only).
        pub const TASKS_LIST: &str = "tasks/list";
        /// `subscriptions/listen` (2026-07-28).
        pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
        /// `elicitation/create` (server to client).
        pub const ELICITATION_CREATE: &str = "elicitation/create";
        /// `notifications/progress`.
        pub const NOTIFY_PROGRESS: &str = "notifications/progress";
        /// `notifications/cancelled`: the sender no longer wants the answer
        /// of a request (2025-11-25 and older; `params.requestId`).
        pub const NOTIFY_CANCELLED: &str = "notifications/cancelled";
        /// Server-to-client: a completion from the client's model.
        pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
        /// Server-to-client: the client's roots.
        pub const ROOTS_LIST: &str = "roots/list";
        /// `notifications/tasks` (SEP-2663).
        pub const NOTIFY_TASKS: &str = "notifications/tasks";
        /// `notifications/tasks/status` (2025-11-25).
        pub const NOTIFY_TASKS_STATUS: &str = "notifications/tasks/status";
        /// `notifications/subscriptions/acknowledged` (2026-07-28).
        pub const NOTIFY_SUBSCRIPTIONS_ACK: &str = "notifications/subscriptions/acknowledged";
    }

    /// Header names (lowercase, as HTTP/2 writes them; HTTP matches them in any case).
    pub mod header {
        /// The protocol version of the request.
        pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
        /// The request's method (2026-07-28).
        pub const METHOD: &str = "mcp-method";
        /// The request's name: tool name, resource uri or task id (2026-07-28).
        pub const NAME: &str = "mcp-name";
        /// The session id (2025-11-25).
        pub const SESSION_ID: &str = "mcp-session-id";
    }

    /// `_meta` keys.
    pub mod meta {
        /// The request's protocol version (2026-07-28).
        pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
        /// The client's implementation info (2026-07-28).
        pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
        /// The client's capabilities (2026-07-28).
        pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
        /// The server's implementation info (on results, 2026-07-28).
        pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
        /// The subscription a notification belongs to (2026-07-28).
        pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
        /// The task a message belongs to (2025-11-25).
        pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
    }
}

/// A2A names.
pub mod a2a {
    /// The JSON-RPC method names (the RPC names of `lf.a2a.v1.A2AService`).
    pub mod methods {
        /// SendMessage
        pub const SEND_MESSAGE: &str = "SendMessage";
        /// SendStreamingMessage (SSE)
        pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
        /// GetTask
        pub const GET_TASK: &str = "GetTask";
        /// ListTasks
        pub const LIST_TASKS: &str = "ListTasks";
        /// CancelTask
        pub const CANCEL_TASK: &str = "CancelTask";
        /// SubscribeToTask (SSE)
        pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
        /// CreateTaskPushNotificationConfig
        pub const CREATE_PUSH_CONFIG: &str = "CreateTaskPushNotificationConfig";
        /// GetTaskPushNotificationConfig
        pub const GET_PUSH_CONFIG: &str = "GetTaskPushNotificationConfig";
        /// ListTaskPushNotificationConfigs
        pub const LIST_PUSH_CONFIGS: &str = "ListTaskPushNotificationConfigs";
        /// DeleteTaskPushNotificationConfig
        pub const DELETE_PUSH_CONFIG: &str = "DeleteTaskPushNotificationConfig";
        /// GetExtendedAgentCard
        pub const GET_EXTENDED_AGENT_CARD: &str = "GetExtendedAgentCard";

        /// Every method.
        pub const ALL: [&str; 11] = [
            SEND_MESSAGE,
            SEND_STREAMING_MESSAGE,
            GET_TASK,
            LIST_TASKS,
            CANCEL_TASK,
            SUBSCRIBE_TO_TASK,
            CREATE_PUSH_CONFIG,
            GET_PUSH_CONFIG,
            LIST_PUSH_CONFIGS,
            DELETE_PUSH_CONFIG,
            GET_EXTENDED_AGENT_CARD,
        ];
    }

    /// The JSON-RPC method names of A2A 0.3 (slash-style; `types/src/types.ts`
    /// at the A2A repository's tag v0.3.0). A request naming one of them is a
    /// 0.3 request, whatever its `A2A-Version` says or leaves out.
    pub mod methods_0_3 {
        /// message/send
        pub const MESSAGE_SEND: &str = "message/send";
        /// message/stream (SSE)
        pub const MESSAGE_STREAM: &str = "message/stream";
        /// tasks/get
        pub const TASKS_GET: &str = "tasks/get";
        /// tasks/cancel
        pub const TASKS_CANCEL: &str = "tasks/cancel";
        /// tasks/resubscribe (SSE)
        pub const TASKS_RESUBSCRIBE: &str = "tasks/resubscribe";
        /// tasks/pushNotificationConfig/set
        pub const PUSH_CONFIG_SET: &str = "tasks/pushNotificationConfig/set";
        /// tasks/pushNotificationConfig/get
        pub const PUSH_CONFIG_GET: &str = "tasks/pushNotificationConfig/get";
        /// tasks/pushNotificationConfig/list
        pub const PUSH_CONFIG_LIST: &str = "tasks/pushNotificationConfig/list";
        /// tasks/pushNotificationConfig/delete
        pub const PUSH_CONFIG_DELETE: &str = "tasks/pushNotificationConfig/delete";
        /// agent/getAuthenticatedExtendedCard
        pub const GET_AUTHENTICATED_EXTENDED_CARD: &str = "agent/getAuthenticatedExtendedCard";

        /// Every method.
        pub const ALL: [&str; 10] = [
            MESSAGE_SEND,
            MESSAGE_STREAM,
            TASKS_GET,
            TASKS_CANCEL,
            TASKS_RESUBSCRIBE,
            PUSH_CONFIG_SET,
            PUSH_CONFIG_GET,
            PUSH_CONFIG_LIST,
            PUSH_CONFIG_DELETE,
            GET_AUTHENTICATED_EXTENDED_CARD,
        ];
    }
}
