//! The A2A error kinds: their JSON-RPC codes, `google.rpc.ErrorInfo` reasons,
//! gRPC status codes and HTTP statuses, as the A2A 1.0.1 specification maps
//! them. Servers produce them at the adapter edge; clients read them back.

/// The A2A error kinds: the A2A-specific codes and the standard JSON-RPC ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum A2aErrorKind {
    /// -32001
    TaskNotFound,
    /// -32002
    TaskNotCancelable,
    /// -32003
    PushNotificationNotSupported,
    /// -32004
    UnsupportedOperation,
    /// -32005
    ContentTypeNotSupported,
    /// -32006
    InvalidAgentResponse,
    /// -32007
    ExtendedAgentCardNotConfigured,
    /// -32008
    ExtensionSupportRequired,
    /// -32009
    VersionNotSupported,
    /// -32010 (A2A 1.1 draft): `ifGenerationMatch` does not match the task's
    /// generation.
    TaskGenerationMismatch,
    /// -32700
    ParseError,
    /// -32600
    InvalidRequest,
    /// -32601
    MethodNotFound,
    /// -32602
    InvalidParams,
    /// -32603
    Internal,
    /// -32603 too (JSON-RPC has no code for it), told apart by its ErrorInfo
    /// (reason `UNAVAILABLE`, domain [`TASKWIRE_ERROR_DOMAIN`]); gRPC
    /// `UNAVAILABLE`, HTTP 503. Not an A2A error: taskwire's answer when its
    /// task store did not answer in time. The request may be retried; a
    /// SendMessage retried with the same messageId makes at most one task.
    Unavailable,
    /// -32600 on JSON-RPC (A2A has no code for it; it travels with HTTP 403),
    /// told apart by its ErrorInfo (reason `PERMISSION_DENIED`, domain
    /// [`TASKWIRE_ERROR_DOMAIN`]); gRPC `PERMISSION_DENIED`, HTTP 403. The caller
    /// is authenticated but its token does not carry the scope the operation
    /// needs (A2A: authenticated but not allowed).
    PermissionDenied,
}

/// gRPC status codes used by the A2A binding (numbers as in `google.rpc.Code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum GrpcCode {
    /// 3
    InvalidArgument = 3,
    /// 5
    NotFound = 5,
    /// 9
    FailedPrecondition = 9,
    /// 12
    Unimplemented = 12,
    /// ABORTED
    Aborted = 10,
    /// 13
    Internal = 13,
    /// 14
    Unavailable = 14,
    /// 7
    PermissionDenied = 7,
}

/// Domain of every `google.rpc.ErrorInfo` the adapter emits.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
/// `@type` of a `google.rpc.ErrorInfo` in JSON.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// `@type` of a `google.rpc.RetryInfo` in JSON.
pub const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";
/// Domain of the ErrorInfo of taskwire's own errors (not A2A's), such as
/// [`A2aErrorKind::Unavailable`].
pub const TASKWIRE_ERROR_DOMAIN: &str = "taskwire";
/// The ErrorInfo metadata key naming what makes a retry safe (`messageId`).
pub const RETRY_SAFE_WITH: &str = "retrySafeWith";
/// How long a client should wait before retrying an [`A2aErrorKind::Unavailable`]
/// request (the HTTP `Retry-After`, the RetryInfo `retryDelay`), in seconds.
pub const RETRY_AFTER_SECS: u64 = 1;

impl A2aErrorKind {
    /// Every kind.
    pub const ALL: [A2aErrorKind; 17] = [
        A2aErrorKind::TaskNotFound,
        A2aErrorKind::TaskNotCancelable,
        A2aErrorKind::PushNotificationNotSupported,
        A2aErrorKind::UnsupportedOperation,
        A2aErrorKind::ContentTypeNotSupported,
        A2aErrorKind::InvalidAgentResponse,
        A2aErrorKind::ExtendedAgentCardNotConfigured,
        A2aErrorKind::ExtensionSupportRequired,
        A2aErrorKind::VersionNotSupported,
        A2aErrorKind::TaskGenerationMismatch,
        A2aErrorKind::ParseError,
        A2aErrorKind::InvalidRequest,
        A2aErrorKind::MethodNotFound,
        A2aErrorKind::InvalidParams,
        A2aErrorKind::Internal,
        // After Internal: its code is Internal's, which reads back as Internal.
        A2aErrorKind::Unavailable,
        // After InvalidRequest: its code is InvalidRequest's.
        A2aErrorKind::PermissionDenied,
    ];

    /// The kind of a JSON-RPC error code (what a client reads back).
    pub fn from_code(code: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The kind of a `google.rpc.ErrorInfo` reason (what a gRPC client reads back).
    pub fn from_reason(reason: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.reason() == reason)
    }

    /// The JSON-RPC error code.
    pub const fn code(self) -> i64 {
        match self {
            A2aErrorKind::TaskNotFound => -32001,
            A2aErrorKind::TaskNotCancelable => -32002,
            A2aErrorKind::PushNotificationNotSupported => -32003,
            A2aErrorKind::UnsupportedOperation => -32004,
            A2aErrorKind::ContentTypeNotSupported => -32005,
            A2aErrorKind::InvalidAgentResponse => -32006,
            A2aErrorKind::ExtendedAgentCardNotConfigured => -32007,
            A2aErrorKind::ExtensionSupportRequired => -32008,
            A2aErrorKind::VersionNotSupported => -32009,
            A2aErrorKind::TaskGenerationMismatch => -32010,
            A2aErrorKind::ParseError => -32700,
            A2aErrorKind::InvalidRequest | A2aErrorKind::PermissionDenied => -32600,
            A2aErrorKind::MethodNotFound => -32601,
            A2aErrorKind::InvalidParams => -32602,
            A2aErrorKind::Internal | A2aErrorKind::Unavailable => -32603,
        }
    }

    /// The `google.rpc.ErrorInfo` reason.
    pub fn reason(self) -> &'static str {
        match self {
            A2aErrorKind::TaskNotFound => "TASK_NOT_FOUND",
            A2aErrorKind::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            A2aErrorKind::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            A2aErrorKind::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            A2aErrorKind::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            A2aErrorKind::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            A2aErrorKind::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            A2aErrorKind::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            A2aErrorKind::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            A2aErrorKind::TaskGenerationMismatch => "TASK_GENERATION_MISMATCH",
            A2aErrorKind::ParseError => "PARSE_ERROR",
            A2aErrorKind::InvalidRequest => "INVALID_REQUEST",
            A2aErrorKind::MethodNotFound => "METHOD_NOT_FOUND",
            A2aErrorKind::InvalidParams => "INVALID_PARAMS",
            A2aErrorKind::Internal => "INTERNAL_ERROR",
            A2aErrorKind::Unavailable => "UNAVAILABLE",
            A2aErrorKind::PermissionDenied => "PERMISSION_DENIED",
        }
    }

    /// The domain of its `google.rpc.ErrorInfo`: [`ERROR_DOMAIN`] for A2A's
    /// errors, [`TASKWIRE_ERROR_DOMAIN`] for taskwire's own.
    pub fn domain(self) -> &'static str {
        match self {
            A2aErrorKind::Unavailable | A2aErrorKind::PermissionDenied => TASKWIRE_ERROR_DOMAIN,
            _ => ERROR_DOMAIN,
        }
    }

    /// Whether the request may be retried as it is (after
    /// [`RETRY_AFTER_SECS`]).
    pub fn retryable(self) -> bool {
        matches!(self, A2aErrorKind::Unavailable)
    }

    /// The gRPC status code (A2A 1.0.1 mapping).
    pub fn grpc_code(self) -> GrpcCode {
        match self {
            A2aErrorKind::TaskNotFound => GrpcCode::NotFound,
            A2aErrorKind::TaskNotCancelable
            | A2aErrorKind::PushNotificationNotSupported
            | A2aErrorKind::UnsupportedOperation
            | A2aErrorKind::ExtendedAgentCardNotConfigured
            | A2aErrorKind::ExtensionSupportRequired
            | A2aErrorKind::VersionNotSupported => GrpcCode::FailedPrecondition,
            A2aErrorKind::ContentTypeNotSupported
            | A2aErrorKind::ParseError
            | A2aErrorKind::InvalidRequest
            | A2aErrorKind::InvalidParams => GrpcCode::InvalidArgument,
            A2aErrorKind::MethodNotFound => GrpcCode::Unimplemented,
            A2aErrorKind::TaskGenerationMismatch => GrpcCode::Aborted,
            A2aErrorKind::InvalidAgentResponse | A2aErrorKind::Internal => GrpcCode::Internal,
            A2aErrorKind::Unavailable => GrpcCode::Unavailable,
            A2aErrorKind::PermissionDenied => GrpcCode::PermissionDenied,
        }
    }

    /// The HTTP status of the HTTP+JSON binding (A2A 1.0.1 §5.4, which changed
    /// TaskNotCancelable from 409, ContentTypeNotSupported from 415 and
    /// InvalidAgentResponse from 502 to the values here; the standard JSON-RPC
    /// errors as the official SDKs map them).
    pub fn http_status(self) -> u16 {
        match self {
            A2aErrorKind::TaskNotFound | A2aErrorKind::MethodNotFound => 404,
            A2aErrorKind::InvalidAgentResponse | A2aErrorKind::Internal => 500,
            A2aErrorKind::Unavailable => 503,
            A2aErrorKind::PermissionDenied => 403,
            A2aErrorKind::TaskGenerationMismatch => 409,
            _ => 400,
        }
    }

    /// The `google.rpc.Code` name the HTTP+JSON binding's error body carries in
    /// `error.status` (agrees with [`A2aErrorKind::http_status`]).
    pub fn http_status_name(self) -> &'static str {
        match self.http_status() {
            404 => "NOT_FOUND",
            500 => "INTERNAL",
            503 => "UNAVAILABLE",
            403 => "PERMISSION_DENIED",
            409 => "ABORTED",
            _ => self.grpc_code().name(),
        }
    }
}

impl GrpcCode {
    /// The `google.rpc.Code` name (`NOT_FOUND`, …).
    pub fn name(self) -> &'static str {
        match self {
            GrpcCode::InvalidArgument => "INVALID_ARGUMENT",
            GrpcCode::NotFound => "NOT_FOUND",
            GrpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcCode::Unimplemented => "UNIMPLEMENTED",
            GrpcCode::Aborted => "ABORTED",
            GrpcCode::Internal => "INTERNAL",
            GrpcCode::Unavailable => "UNAVAILABLE",
            GrpcCode::PermissionDenied => "PERMISSION_DENIED",
        }
    }
}

/// A `google.rpc.ErrorInfo` in JSON, as the JSON-RPC binding puts it in an
/// error's `data` array and the HTTP+JSON binding in its error's `details`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorInfoJson {
    /// [`ERROR_INFO_TYPE`].
    #[serde(rename = "@type")]
    pub type_url: String,
    /// The reason (`TASK_NOT_FOUND`, …).
    pub reason: String,
    /// The domain ([`ERROR_DOMAIN`] for A2A's own errors).
    pub domain: String,
    /// Extra metadata.
    #[serde(default)]
    pub metadata: std::collections::BTreeMap<String, String>,
}

impl ErrorInfoJson {
    /// The ErrorInfo of an A2A error kind; a retryable kind's metadata says
    /// that a retry with the same `messageId` is safe.
    pub fn of(kind: A2aErrorKind) -> Self {
        Self {
            type_url: ERROR_INFO_TYPE.to_string(),
            reason: kind.reason().to_string(),
            domain: kind.domain().to_string(),
            metadata: error_metadata(kind).into_iter().collect(),
        }
    }
}

/// The ErrorInfo metadata of an error kind: for a retryable one,
/// `retryable: "true"` and [`RETRY_SAFE_WITH`]`: "messageId"`.
pub fn error_metadata(kind: A2aErrorKind) -> Vec<(String, String)> {
    if kind.retryable() {
        vec![
            ("retryable".to_string(), "true".to_string()),
            (RETRY_SAFE_WITH.to_string(), "messageId".to_string()),
        ]
    } else {
        Vec::new()
    }
}

/// A `google.rpc.RetryInfo` in JSON (after the ErrorInfo of a retryable error).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetryInfoJson {
    /// [`RETRY_INFO_TYPE`].
    #[serde(rename = "@type")]
    pub type_url: String,
    /// How long to wait, as a protobuf JSON Duration (`"1s"`).
    #[serde(rename = "retryDelay")]
    pub retry_delay: String,
}

impl RetryInfoJson {
    /// The RetryInfo of a retryable kind ([`RETRY_AFTER_SECS`]), else `None`.
    pub fn of(kind: A2aErrorKind) -> Option<Self> {
        kind.retryable().then(|| Self {
            type_url: RETRY_INFO_TYPE.to_string(),
            retry_delay: format!("{RETRY_AFTER_SECS}s"),
        })
    }
}

/// The error body of the HTTP+JSON binding: a `google.rpc.Status` in JSON.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RestErrorBody {
    /// The status.
    pub error: RestStatus,
}

/// The `error` member of [`RestErrorBody`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RestStatus {
    /// The HTTP status code.
    pub code: u16,
    /// The `google.rpc.Code` name ([`A2aErrorKind::http_status_name`]).
    pub status: String,
    /// The message.
    pub message: String,
    /// The ErrorInfo.
    #[serde(default)]
    pub details: Vec<ErrorInfoJson>,
}

impl RestErrorBody {
    /// The body of an A2A error answered with HTTP `code`.
    pub fn new(code: u16, kind: A2aErrorKind, message: impl Into<String>) -> Self {
        Self {
            error: RestStatus {
                code,
                status: kind.http_status_name().to_string(),
                message: message.into(),
                details: vec![ErrorInfoJson::of(kind)],
            },
        }
    }
}
