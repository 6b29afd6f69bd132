//! PostgreSQL for the tests that need it: the database named by
//! `TASKWIRE_TEST_POSTGRES_URL` (skipped, saying so, without it), one fresh
//! schema per test, dropped when the test ends.

pub(crate) fn pg_url() -> Option<String> {
    match std::env::var("TASKWIRE_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            eprintln!("skipped: TASKWIRE_TEST_POSTGRES_URL is not set");
            None
        }
    }
}

/// Drops a test's schema when the test ends, passed or not.
pub(crate) struct DropSchema {
    url: String,
    schema: String,
}

impl Drop for DropSchema {
    fn drop(&mut self) {
        let (url, schema) = (self.url.clone(), self.schema.clone());
        // Its own thread and runtime: the test's runtime may be shutting down.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                if let Ok((client, conn)) =
                    tokio_postgres::connect(&url, tokio_postgres::NoTls).await
                {
                    tokio::spawn(conn);
                    let _ = client
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                        .await;
                }
            });
        })
        .join();
    }
}

/// A fresh schema for one test, the store address that uses it, and the guard
/// that drops it.
pub(crate) async fn fresh_store(url: &str) -> (String, String, DropSchema) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test database");
    tokio::spawn(conn);
    let schema = format!(
        "tw_test_{}_{}",
        std::process::id(),
        rand_suffix().to_lowercase()
    );
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .expect("create schema");
    let sep = if url.contains('?') { '&' } else { '?' };
    let guard = DropSchema {
        url: url.to_string(),
        schema: schema.clone(),
    };
    (
        schema.clone(),
        format!("{url}{sep}options=-csearch_path%3D{schema}"),
        guard,
    )
}

fn rand_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:x}", h.finish())
}

/// The store address of a test that restarts a server on one store: a fresh
/// PostgreSQL schema (with the guard that drops it) when `postgres`, else a
/// SQLite file in `dir`. `None` when PostgreSQL is asked for and not
/// configured (the test is skipped, saying so).
#[allow(dead_code, reason = "used by the bridge tests, not by multinode")]
pub(crate) async fn store_in(
    postgres: bool,
    dir: &std::path::Path,
) -> Option<(String, Option<DropSchema>)> {
    if !postgres {
        let file = dir.join("bridge.db");
        return Some((format!("sqlite://{}", file.display()), None));
    }
    let (_, store, guard) = fresh_store(&pg_url()?).await;
    Some((store, Some(guard)))
}
