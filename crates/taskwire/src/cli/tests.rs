//! Command-line parsing: defaults, overrides, bad values, help text; the
//! stores, agents and server the flags make.

use std::time::Duration;

use clap::{CommandFactory, Parser};

use super::args::parse_duration;
use super::serve::agent_by_name;
use super::serve::sweep_interval;
use super::store::open_store;
use super::upstream::split_named;
use super::{Cli, Command, LogFormat, PgArgs, ServeArgs, Ttl};
use crate::Error;

fn serve(args: &[&str]) -> Result<ServeArgs, clap::Error> {
    let argv = ["taskwire", "serve"]
        .into_iter()
        .chain(args.iter().copied());
    Cli::try_parse_from(argv).map(|cli| match cli.command {
        Command::Serve(a) => a,
        other => panic!("parsed as another command: {other:?}"),
    })
}

#[test]
fn serve_defaults() {
    let a = serve(&[]).expect("defaults parse");
    assert_eq!(a.listen, "127.0.0.1:7420".parse().expect("addr"));
    assert_eq!(a.store, "sqlite://taskwire.db");
    assert_eq!(a.agent, "scripted");
    assert_eq!(a.auth_tokens, None);
    assert!(!a.insecure_no_auth);
    assert_eq!(a.log_format, LogFormat::Text);
    assert_eq!(a.drain_timeout, Duration::from_secs(10));
    assert_eq!(a.max_concurrent_turns, 256);
    assert_eq!(a.lease, Duration::from_secs(30));
    assert_eq!(a.task_ttl, Ttl(Some(Duration::from_secs(7 * 24 * 3600))));
    assert_eq!(a.idle_lifespan, None);
    assert_eq!(a.max_message_bytes, 1024 * 1024);
    assert_eq!(a.pg.pg_pool_size, 16);
    assert_eq!(a.pg.pg_statement_timeout, Duration::from_secs(30));
    assert!(a.deny_phrases.is_empty());
}

#[test]
fn serve_overrides() {
    let a = serve(&[
        "--listen",
        "[::1]:0",
        "--store",
        "memory://",
        "--auth-tokens",
        "/etc/taskwire/tokens",
        "--insecure-no-auth",
        "--log-format",
        "json",
        "--drain-timeout",
        "500ms",
        "--max-concurrent-turns",
        "8",
        "--lease",
        "1m 30s",
        "--task-ttl",
        "never",
        "--idle-lifespan",
        "2h",
        "--max-message-bytes",
        "4096",
        "--deny-phrase",
        "drop table",
        "--deny-phrase",
        "rm -rf",
        "--pg-pool-size",
        "4",
        "--pg-statement-timeout",
        "2s",
    ])
    .expect("parse");
    assert_eq!(a.listen, "[::1]:0".parse().expect("addr"));
    assert_eq!(a.store, "memory://");
    assert_eq!(
        a.auth_tokens.as_deref(),
        Some(std::path::Path::new("/etc/taskwire/tokens"))
    );
    assert!(a.insecure_no_auth);
    assert_eq!(a.log_format, LogFormat::Json);
    assert_eq!(a.drain_timeout, Duration::from_millis(500));
    assert_eq!(a.max_concurrent_turns, 8);
    assert_eq!(a.lease, Duration::from_secs(90));
    assert_eq!(a.task_ttl, Ttl(None));
    assert_eq!(a.idle_lifespan, Some(Duration::from_secs(7200)));
    assert_eq!(a.max_message_bytes, 4096);
    assert_eq!(a.deny_phrases, vec!["drop table", "rm -rf"]);
    assert_eq!(a.pg.pg_pool_size, 4);
    assert_eq!(a.pg.pg_statement_timeout, Duration::from_secs(2));
}

#[test]
fn bad_values_are_rejected_with_the_flag_named() {
    for (args, flag) in [
        (&["--listen", "localhost"][..], "--listen"),
        (&["--drain-timeout", "10"][..], "--drain-timeout"),
        (&["--drain-timeout", "soon"][..], "--drain-timeout"),
        (&["--lease", "0s"][..], "--lease"),
        (
            &["--max-concurrent-turns", "many"][..],
            "--max-concurrent-turns",
        ),
        (&["--max-message-bytes", "1MiB"][..], "--max-message-bytes"),
        (&["--log-format", "xml"][..], "--log-format"),
        (&["--task-ttl", "sometimes"][..], "--task-ttl"),
    ] {
        let err = serve(args).expect_err("rejected").to_string();
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    assert!(
        Cli::try_parse_from(["taskwire"]).is_err(),
        "a subcommand is required"
    );
    assert!(Cli::try_parse_from(["taskwire", "conformance"]).is_err());
}

#[test]
fn durations() {
    assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration(" 1m "), Ok(Duration::from_secs(60)));
    assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    assert!(parse_duration("10").expect_err("no unit").contains("10s"));
}

#[test]
fn every_flag_has_an_env_var_and_help() {
    let mut cmd = Cli::command();
    cmd.build();
    let serve = cmd.find_subcommand("serve").expect("serve");
    for arg in serve.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "help" || id == "version" {
            continue;
        }
        let env = arg.get_env().and_then(|e| e.to_str()).unwrap_or_default();
        assert!(
            env.starts_with("TASKWIRE_"),
            "--{id} has no TASKWIRE_ env var"
        );
        assert!(arg.get_help().is_some(), "--{id} has no help");
    }
    let help = serve.clone().render_long_help().to_string();
    for env in [
        "TASKWIRE_LISTEN",
        "TASKWIRE_STORE",
        "TASKWIRE_AGENT",
        "TASKWIRE_AUTH_TOKENS",
    ] {
        assert!(help.contains(env), "{env} not in help:\n{help}");
    }
}

#[tokio::test]
async fn unknown_agents_and_stores_are_clear_errors() {
    let err = agent_by_name("gpt").err().expect("unknown agent");
    assert!(matches!(err, Error::UnknownAgent { .. }));
    assert!(err.to_string().contains("scripted"), "{err}");
    assert!(agent_by_name("scripted").is_ok());

    let pg = PgArgs::default();
    let mut unknown = vec![
        "taskwire.db",
        "memory://x",
        "sqlite:taskwire.db",
        "",
        "mysql://db/x",
    ];
    if cfg!(not(feature = "postgres")) {
        unknown.push("postgres://db/x");
    }
    for url in unknown {
        let err = open_store(url, &pg).await.err().expect("unknown store");
        assert!(matches!(err, Error::UnknownStore { .. }), "{url}: {err}");
        assert!(err.to_string().contains("memory://"), "{err}");
    }
    assert_eq!(
        open_store("memory://", &pg).await.expect("memory").kind(),
        "memory"
    );
}

/// A postgres:// address opens the PostgreSQL store (on the database named by
/// TASKWIRE_TEST_POSTGRES_URL), with the pool and timeout flags; an address
/// nothing listens on fails to open, naming the address.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_urls_open_the_postgres_store() {
    let pg = PgArgs {
        pg_pool_size: 2,
        pg_statement_timeout: Duration::from_secs(5),
        ..PgArgs::default()
    };
    let err = open_store("postgres://nobody@127.0.0.1:1/none?connect_timeout=2", &pg)
        .await
        .err()
        .expect("nothing listens on port 1");
    assert!(matches!(err, Error::StoreOpen { .. }), "{err}");
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    let Some(url) = std::env::var("TASKWIRE_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("skipped: TASKWIRE_TEST_POSTGRES_URL is not set");
        return;
    };
    // A schema of its own (through the connection's search_path), dropped after.
    let schema = format!("tw_test_cli_{}", taskwire_core::TaskId::new().as_str());
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .expect("create schema");
    let sep = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{sep}options=-csearch_path%3D{schema}");
    let opened = open_store(&scoped, &pg).await.map(|store| store.kind());
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .expect("drop schema");
    assert_eq!(opened.expect("postgres store"), "postgres");
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_urls_open_the_sqlite_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!(
        "sqlite://{}?synchronous=normal",
        dir.path().join("t.db").display()
    );
    let store = open_store(&url, &PgArgs::default())
        .await
        .expect("sqlite store");
    assert_eq!(store.kind(), "sqlite");
    let err = open_store("sqlite://x.db?synchronous=sometimes", &PgArgs::default())
        .await
        .err()
        .expect("bad option");
    assert!(matches!(err, Error::StoreOpen { .. }), "{err}");
}

#[tokio::test]
async fn serve_flags_reach_the_service() {
    let args = serve(&[
        "--listen",
        "127.0.0.1:0",
        "--store",
        "memory://",
        "--deny-phrase",
        "Forbidden Words",
        "--max-message-bytes",
        "64",
    ])
    .expect("parse");
    let server = super::build_server(&args).await.expect("build");
    assert_ne!(server.local_addr().port(), 0);
    let service = server.service();
    assert_eq!(service.limits().max_message_bytes, 64);
    assert_eq!(service.agent_name(), "scripted");
    let me = taskwire_core::Caller::local();
    let create =
        |text: &str| taskwire_core::CreateTask::new(taskwire_core::Message::user_text(text));
    let err = service
        .create(&me, create("these are forbidden words"))
        .await
        .expect_err("denied");
    assert!(
        matches!(err, taskwire_core::CoreError::DeniedByGuardrail { .. }),
        "{err}"
    );
    let err = service
        .create(&me, create(&"x".repeat(65)))
        .await
        .expect_err("too large");
    assert!(
        matches!(err, taskwire_core::CoreError::TooLarge { .. }),
        "{err}"
    );
    service.create(&me, create("fine")).await.expect("allowed");
}

#[test]
fn a_name_is_split_off_an_upstream_but_a_querys_equals_sign_is_not_one() {
    assert_eq!(
        split_named("mcp+http://h/mcp?k=v"),
        (None, "mcp+http://h/mcp?k=v")
    );
    assert_eq!(
        split_named("n_1=mcp+http://h/mcp?k=v"),
        (Some("n_1"), "mcp+http://h/mcp?k=v")
    );
}

#[test]
fn the_sweeper_runs_often_enough_for_the_idle_lifespan() {
    let s = Duration::from_secs;
    assert_eq!(sweep_interval(None, None), s(60));
    assert_eq!(sweep_interval(None, Some(s(2))), s(1));
    assert_eq!(sweep_interval(None, Some(s(20))), s(5));
    assert_eq!(sweep_interval(None, Some(s(3600))), s(60));
    // The TTL counts too: a short one is swept often.
    assert_eq!(sweep_interval(Some(s(1)), None), s(1));
    assert_eq!(sweep_interval(Some(s(20)), Some(s(3600))), s(5));
    assert_eq!(sweep_interval(Some(s(7 * 86400)), None), s(60));
}

#[cfg(feature = "bridge")]
#[test]
fn upstream_oauth_flags_become_one_client_config_per_upstream() {
    use super::upstream::upstream_oauth;
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "s3cret\n").expect("write");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").expect("write");
    let secret = secret.to_str().expect("path");
    let names = vec![Some("a".to_string()), Some("b".to_string())];
    let parse = |extra: &[&str]| {
        let mut argv = vec![
            "--upstream",
            "a=mcp+http://127.0.0.1:1/mcp",
            "--upstream",
            "b=a2a+http://127.0.0.1:2",
        ];
        argv.extend_from_slice(extra);
        let a = serve(&argv).expect("parse");
        upstream_oauth(&a.upstream, &names)
    };
    // No flag: no OAuth client.
    let none = parse(&[]).expect("ok");
    assert!(none.iter().all(Option::is_none));
    // One upstream named: only it gets one, with its scopes as the ceiling.
    let sa = format!("a={secret}");
    let one = parse(&[
        "--upstream-oauth-client-id",
        "a=bridge",
        "--upstream-oauth-client-secret-file",
        &sa,
        "--upstream-oauth-scopes",
        "a=read write",
        "--upstream-oauth-max-step-ups",
        "1",
    ])
    .expect("ok");
    let c = one[0].as_ref().expect("a has OAuth");
    assert!(one[1].is_none());
    assert_eq!(c.client_id.as_deref(), Some("bridge"));
    assert_eq!(c.scopes, ["read", "write"]);
    assert_eq!(
        c.allowed_scopes.as_deref(),
        Some(&["read".to_string(), "write".to_string()][..])
    );
    assert_eq!(c.max_step_ups, 1);
    // The secret never shows.
    assert!(!format!("{c:?}").contains("s3cret"));
    // Refusals: a name no upstream has, a secret without an id, an empty
    // file, a method that does not fit, secret and key together.
    let refused = |extra: &[&str], what: &str| {
        let e = parse(extra).expect_err(what).to_string();
        assert!(e.contains("upstream-oauth"), "{what}: {e}");
    };
    refused(&["--upstream-oauth-client-id", "c=x"], "unknown name");
    refused(&["--upstream-oauth-client-secret-file", &sa], "no id");
    let empty_a = format!("a={}", empty.to_str().expect("path"));
    refused(
        &[
            "--upstream-oauth-client-id",
            "a=x",
            "--upstream-oauth-client-secret-file",
            &empty_a,
        ],
        "empty",
    );
    refused(
        &[
            "--upstream-oauth-client-id",
            "a=x",
            "--upstream-oauth-client-secret-file",
            &sa,
            "--upstream-oauth-token-endpoint-auth",
            "a=private_key_jwt",
        ],
        "method",
    );
    refused(
        &[
            "--upstream-oauth-client-id",
            "a=x",
            "--upstream-oauth-client-secret-file",
            &sa,
            "--upstream-oauth-private-key-file",
            &sa,
        ],
        "both",
    );
    refused(
        &["--upstream-oauth-scopes", "a=read"],
        "scopes without a client",
    );
}
