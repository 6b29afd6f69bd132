//! Drives any A2A 1.0 agent through the JSON-RPC and (if the card lists one)
//! gRPC clients and prints what came back: the card, a blocking echo, a
//! streamed echo, `ask` then an answer, a subscription, list, cancel, and
//! the error for an unknown task.
//!
//! `cargo run -p taskwire-client --example a2a_smoke -- http://127.0.0.1:7420 [token]`

use futures::StreamExt;
use taskwire_client::a2a::{self, pb, A2aClient};
use taskwire_client::grpc::A2aGrpcClient;
use taskwire_client::A2aBinding as _;
use taskwire_client::{ClientConfig, ClientError};

fn task_of(r: &pb::SendMessageResponse) -> Option<pb::Task> {
    match &r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => Some(t.clone()),
        _ => None,
    }
}

fn state(t: &pb::Task) -> String {
    t.status
        .as_ref()
        .map(|s| format!("{:?}", s.state()))
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:7420".into());
    let mut b = ClientConfig::builder(base);
    if let Some(t) = args.next() {
        b = b.bearer_token(t);
    }
    let config = b.build();
    let (client, card) = A2aClient::discover(config.clone()).await?;
    println!("card: {} at {}", card.name, client.endpoint());

    let echo = client.send_text("hello", false).await?;
    println!("blocking echo: {}", echo.raw);

    let req = a2a::send_request(a2a::text_message("hello stream"));
    let mut s = client.send_streaming_message(req).await?;
    while let Some(ev) = s.next().await {
        let ev = ev?;
        println!("stream event {:?}: {}", ev.event_id, ev.raw());
    }

    if let Some(asked) = task_of(
        &client
            .send_text("ask What is your name?", false)
            .await?
            .value,
    ) {
        println!("asked: {}", state(&asked));
        let mut sub = client.subscribe_to_task(&asked.id).await;
        let mut answer = a2a::text_message("Ada");
        answer.task_id = asked.id.clone();
        answer.context_id = asked.context_id.clone();
        let done = client.send_message(a2a::send_request(answer)).await?;
        println!("answered: {}", done.raw);
        if let Ok(sub) = sub.as_mut() {
            while let Some(ev) = sub.next().await {
                match ev {
                    Ok(ev) => println!("subscription event: {}", ev.raw()),
                    Err(e) => println!("subscription error: {e}"),
                }
            }
        } else if let Err(e) = sub {
            println!("subscribe refused: {e}");
        }
    }

    let list = client.list_tasks(pb::ListTasksRequest::default()).await;
    match list {
        Ok(l) => println!("list: {} tasks", l.tasks.len()),
        Err(e) => println!("list: {e}"),
    }
    if let Some(t) = task_of(&client.send_text("ask hold on", false).await?.value) {
        match client.cancel_task(&t.id).await {
            Ok(c) => println!("cancel: {}", state(&c)),
            Err(e) => println!("cancel: {e}"),
        }
    }
    match client.get_task("no-such-task", None).await {
        Ok(t) => println!("unknown task unexpectedly found: {}", t.raw),
        Err(e) => println!("unknown task: {e} ({:?})", e.rpc()),
    }

    if let Some(grpc) = A2aGrpcClient::from_card(config, &card)? {
        println!("gRPC at {}", grpc.target());
        let r = grpc
            .send_message(a2a::send_request(a2a::text_message("hello grpc")))
            .await?;
        println!("gRPC echo: {}", r.raw);
        let s = grpc
            .send_streaming_message(a2a::send_request(a2a::text_message("grpc stream")))
            .await?;
        for ev in s.collect_all().await? {
            println!("gRPC stream event: {}", ev.raw());
        }
        match grpc.get_task("no-such-task", None).await {
            Ok(_) => println!("gRPC unknown task unexpectedly found"),
            Err(e) => println!("gRPC unknown task: {e} ({:?})", e.rpc()),
        }
    }
    Ok(())
}
