//! The prost/pbjson types of taskwire-a2a, encoded by its ProtoJSON encoder, validate
//! against the schemas generated from the same proto: every message kind with its
//! fields set (oneofs, maps, bytes, enums, well-known types), so the generator and
//! the encoder agree beyond what the golden fixtures happen to contain.

use serde::Serialize;
use serde_json::json;
use taskwire_a2a::pb;
use taskwire_a2a::protojson;
use taskwire_schemas::Validators;
use taskwire_wire::wkt::{Struct, Timestamp, Value as PValue};

fn check<T: Serialize>(v: &mut Validators, kind: &str, msg: &T) {
    let json = protojson::to_value(msg).expect("encode");
    if let Err(e) = v.validate("a2a", kind, &json) {
        panic!("a2a/{kind} refuses {json}:\n{}", e.join("\n"));
    }
}

fn s(x: &str) -> String {
    x.to_string()
}

fn meta() -> Option<Struct> {
    json!({"n": 2.5, "b": true, "s": "x", "l": [1.0, null]})
        .as_object()
        .map(Struct::from)
}

fn ts() -> Option<Timestamp> {
    Some(Timestamp {
        seconds: 1_785_240_000,
        nanos: 123_000_000,
    })
}

fn part(content: pb::part::Content) -> pb::Part {
    pb::Part {
        content: Some(content),
        metadata: meta(),
        filename: s("a.bin"),
        media_type: s("application/octet-stream"),
    }
}

fn message() -> pb::Message {
    pb::Message {
        message_id: s("m1"),
        context_id: s("c1"),
        task_id: s("t1"),
        role: pb::Role::Agent as i32,
        parts: vec![
            part(pb::part::Content::Text(s("hi"))),
            part(pb::part::Content::Raw(vec![0, 1, 2, 250, 251, 252, 253])),
            part(pb::part::Content::Url(s("https://files.invalid/a"))),
            part(pb::part::Content::Data(PValue::from(&json!(["x"])))),
        ],
        metadata: meta(),
        extensions: vec![s("urn:x")],
        reference_task_ids: vec![s("t0")],
    }
}

fn artifact() -> pb::Artifact {
    pb::Artifact {
        artifact_id: s("a1"),
        name: s("echo"),
        description: s("d"),
        parts: message().parts,
        metadata: meta(),
        extensions: vec![s("urn:x")],
    }
}

fn status() -> pb::TaskStatus {
    pb::TaskStatus {
        state: pb::TaskState::InputRequired as i32,
        message: Some(message()),
        timestamp: ts(),
    }
}

fn task() -> pb::Task {
    pb::Task {
        id: s("t1"),
        context_id: s("c1"),
        status: Some(status()),
        artifacts: vec![artifact()],
        history: vec![message()],
        metadata: meta(),
        // A2A 1.1 only; 0 is absent, as in every 1.0 answer.
        generation: 0,
    }
}

fn push_config() -> pb::TaskPushNotificationConfig {
    pb::TaskPushNotificationConfig {
        tenant: s("acme"),
        id: s("cfg"),
        task_id: s("t1"),
        url: s("https://hooks.invalid/a2a"),
        token: s("tok"),
        authentication: Some(pb::AuthenticationInfo {
            scheme: s("Bearer"),
            credentials: s("secret"),
        }),
    }
}

#[test]
fn tasks_messages_and_stream_frames_validate() {
    let mut v = Validators::new();
    check(&mut v, "Message", &message());
    check(&mut v, "Artifact", &artifact());
    check(&mut v, "TaskStatus", &status());
    check(&mut v, "Task", &task());
    for state in 1..=8 {
        let mut t = task();
        if let Some(st) = t.status.as_mut() {
            st.state = state;
        }
        check(&mut v, "Task", &t);
    }
    use pb::stream_response::Payload;
    let frames = [
        Payload::Task(task()),
        Payload::Message(message()),
        Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
            task_id: s("t1"),
            context_id: s("c1"),
            status: Some(status()),
            metadata: meta(),
            generation: 0,
        }),
        Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
            task_id: s("t1"),
            context_id: s("c1"),
            artifact: Some(artifact()),
            append: true,
            last_chunk: true,
            metadata: meta(),
            generation: 0,
        }),
    ];
    for p in frames {
        check(
            &mut v,
            "StreamResponse",
            &pb::StreamResponse { payload: Some(p) },
        );
    }
    use pb::send_message_response::Payload as Send;
    check(
        &mut v,
        "SendMessageResponse",
        &pb::SendMessageResponse {
            payload: Some(Send::Task(task())),
        },
    );
    check(
        &mut v,
        "SendMessageResponse",
        &pb::SendMessageResponse {
            payload: Some(Send::Message(message())),
        },
    );
    check(
        &mut v,
        "ListTasksResponse",
        &pb::ListTasksResponse {
            tasks: vec![task()],
            next_page_token: s("p2"),
            page_size: 50,
            total_size: 51,
        },
    );
    check(
        &mut v,
        "ListTasksResponse",
        &pb::ListTasksResponse::default(),
    );
}

#[test]
fn requests_validate() {
    let mut v = Validators::new();
    let mut user = message();
    user.role = pb::Role::User as i32;
    check(
        &mut v,
        "SendMessageRequest",
        &pb::SendMessageRequest {
            tenant: s("acme"),
            message: Some(user),
            configuration: Some(pb::SendMessageConfiguration {
                accepted_output_modes: vec![s("text/plain")],
                task_push_notification_config: Some(push_config()),
                history_length: Some(0),
                return_immediately: true,
                if_generation_match: None,
            }),
            metadata: meta(),
        },
    );
    check(
        &mut v,
        "GetTaskRequest",
        &pb::GetTaskRequest {
            tenant: s("acme"),
            id: s("t1"),
            history_length: Some(3),
            current_generation: None,
        },
    );
    check(
        &mut v,
        "ListTasksRequest",
        &pb::ListTasksRequest {
            tenant: s("acme"),
            context_id: s("c1"),
            status: pb::TaskState::Working as i32,
            page_size: Some(10),
            page_token: s("p"),
            history_length: Some(1),
            status_timestamp_after: ts(),
            include_artifacts: Some(true),
        },
    );
    check(
        &mut v,
        "CancelTaskRequest",
        &pb::CancelTaskRequest {
            tenant: s("acme"),
            id: s("t1"),
            metadata: meta(),
        },
    );
    check(
        &mut v,
        "SubscribeToTaskRequest",
        &pb::SubscribeToTaskRequest {
            tenant: s("acme"),
            id: s("t1"),
        },
    );
    check(&mut v, "TaskPushNotificationConfig", &push_config());
    check(
        &mut v,
        "GetTaskPushNotificationConfigRequest",
        &pb::GetTaskPushNotificationConfigRequest {
            tenant: s("acme"),
            task_id: s("t1"),
            id: s("cfg"),
        },
    );
    check(
        &mut v,
        "DeleteTaskPushNotificationConfigRequest",
        &pb::DeleteTaskPushNotificationConfigRequest {
            tenant: s("acme"),
            task_id: s("t1"),
            id: s("cfg"),
        },
    );
    check(
        &mut v,
        "ListTaskPushNotificationConfigsRequest",
        &pb::ListTaskPushNotificationConfigsRequest {
            tenant: s("acme"),
            task_id: s("t1"),
            page_size: 5,
            page_token: s("p"),
        },
    );
    check(
        &mut v,
        "ListTaskPushNotificationConfigsResponse",
        &pb::ListTaskPushNotificationConfigsResponse {
            configs: vec![push_config()],
            next_page_token: s("n"),
        },
    );
    check(
        &mut v,
        "GetExtendedAgentCardRequest",
        &pb::GetExtendedAgentCardRequest { tenant: s("acme") },
    );
}

#[test]
fn an_agent_card_with_every_security_scheme_validates() {
    let mut v = Validators::new();
    use pb::o_auth_flows::Flow;
    use pb::security_scheme::Scheme;
    let scopes = || [(s("read"), s("Read"))].into_iter().collect();
    let schemes = [
        Scheme::ApiKeySecurityScheme(pb::ApiKeySecurityScheme {
            description: s("d"),
            location: s("header"),
            name: s("X-Key"),
        }),
        Scheme::HttpAuthSecurityScheme(pb::HttpAuthSecurityScheme {
            description: s("d"),
            scheme: s("Bearer"),
            bearer_format: s("JWT"),
        }),
        Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
            description: s("d"),
            flows: Some(pb::OAuthFlows {
                flow: Some(Flow::AuthorizationCode(pb::AuthorizationCodeOAuthFlow {
                    authorization_url: s("https://auth.invalid/a"),
                    token_url: s("https://auth.invalid/t"),
                    refresh_url: s("https://auth.invalid/r"),
                    scopes: scopes(),
                    pkce_required: true,
                })),
            }),
            oauth2_metadata_url: s("https://auth.invalid/.well-known"),
        }),
        Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
            description: s(""),
            flows: Some(pb::OAuthFlows {
                flow: Some(Flow::ClientCredentials(pb::ClientCredentialsOAuthFlow {
                    token_url: s("https://auth.invalid/t"),
                    refresh_url: s(""),
                    scopes: scopes(),
                })),
            }),
            oauth2_metadata_url: s(""),
        }),
        Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
            description: s(""),
            flows: Some(pb::OAuthFlows {
                flow: Some(Flow::DeviceCode(pb::DeviceCodeOAuthFlow {
                    device_authorization_url: s("https://auth.invalid/d"),
                    token_url: s("https://auth.invalid/t"),
                    refresh_url: s(""),
                    scopes: scopes(),
                })),
            }),
            oauth2_metadata_url: s(""),
        }),
        Scheme::OpenIdConnectSecurityScheme(pb::OpenIdConnectSecurityScheme {
            description: s("d"),
            open_id_connect_url: s("https://auth.invalid/.well-known/openid-configuration"),
        }),
        Scheme::MtlsSecurityScheme(pb::MutualTlsSecurityScheme {
            description: s("d"),
        }),
    ];
    let security_schemes = schemes
        .into_iter()
        .enumerate()
        .map(|(i, sc)| (format!("s{i}"), pb::SecurityScheme { scheme: Some(sc) }))
        .collect();
    let requirement = pb::SecurityRequirement {
        schemes: [(
            s("s0"),
            pb::StringList {
                list: vec![s("read")],
            },
        )]
        .into_iter()
        .collect(),
    };
    let card = pb::AgentCard {
        name: s("scripted"),
        description: s("d"),
        supported_interfaces: vec![pb::AgentInterface {
            url: s("http://127.0.0.1:1/a2a"),
            protocol_binding: s("JSONRPC"),
            tenant: s("acme"),
            protocol_version: s("1.0"),
        }],
        provider: Some(pb::AgentProvider {
            url: s("https://example.invalid"),
            organization: s("Org"),
        }),
        version: s("0.1.0"),
        documentation_url: Some(s("https://example.invalid/docs")),
        capabilities: Some(pb::AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: vec![pb::AgentExtension {
                uri: s("urn:x"),
                description: s("d"),
                required: true,
                params: meta(),
            }],
            extended_agent_card: Some(true),
        }),
        security_schemes,
        security_requirements: vec![requirement.clone()],
        default_input_modes: vec![s("text/plain")],
        default_output_modes: vec![s("text/plain")],
        skills: vec![pb::AgentSkill {
            id: s("run"),
            name: s("Run"),
            description: s("d"),
            tags: vec![s("t")],
            examples: vec![s("e")],
            input_modes: vec![s("text/plain")],
            output_modes: vec![s("text/plain")],
            security_requirements: vec![requirement],
        }],
        signatures: vec![pb::AgentCardSignature {
            protected: s("eyJ"),
            signature: s("sig"),
            header: meta(),
        }],
        icon_url: Some(s("https://example.invalid/i.png")),
    };
    check(&mut v, "AgentCard", &card);
    // The card without a name is not a card.
    let mut nameless = card;
    nameless.name.clear();
    let json = protojson::to_value(&nameless).expect("encode");
    assert!(v.validate("a2a", "AgentCard", &json).is_err());
}
