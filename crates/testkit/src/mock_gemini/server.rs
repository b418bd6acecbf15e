//! HTTP side of the mock Gemini API: routing and response bodies (JSON and SSE).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response as HttpResponse};
use serde_json::{Value, json};

use super::{Reply, Script};
use crate::mock_http::{CONTENT_TYPE_SSE, End, Shared, streamed};

/// The header the mock's responses carry a request id in.
const REQUEST_ID: &str = "x-request-id";

/// The single handler behind every route.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared<Script>>>,
    req: Request,
) -> HttpResponse {
    let Some(req) = shared.record(req).await else {
        return error(StatusCode::BAD_REQUEST, "mock: unreadable body");
    };
    let action = req.path.rsplit_once(':').map(|(_, a)| a.to_owned());
    let model = model_of(&req.path);
    match (&req.method, action.as_deref()) {
        (&Method::POST, Some("generateContent")) => {
            axum::Json(router_answer(&model)).into_response()
        }
        (&Method::POST, Some("streamGenerateContent")) => {
            let (script, _) = shared.next();
            let empty = Vec::new();
            let contents = req.body.get("contents").and_then(Value::as_array).unwrap_or(&empty);
            let events = events(&script.reply_for(contents), &model);
            streamed(CONTENT_TYPE_SSE, events, script.chunk_delay, End::Finish, REQUEST_ID)
        }
        (&Method::POST, Some("countTokens")) => {
            axum::Json(json!({"totalTokens": 100})).into_response()
        }
        (method, _) => {
            error(StatusCode::NOT_FOUND, &format!("mock: no route for {method} {}", req.path))
        }
    }
}

/// `gemini-3.8-flash` from `/v1beta/models/gemini-3.8-flash:streamGenerateContent`.
fn model_of(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or_default();
    name.split(':').next().unwrap_or_default().to_owned()
}

/// A Gemini-style error body.
fn error(status: StatusCode, message: &str) -> HttpResponse {
    let body =
        json!({"error": {"code": status.as_u16(), "message": message, "status": "NOT_FOUND"}});
    (status, axum::Json(body)).into_response()
}

fn usage(output: u64) -> Value {
    json!({"promptTokenCount": 100, "candidatesTokenCount": output, "totalTokenCount": 100 + output})
}

/// The answer to every non-streamed question (the model router, the next-speaker check): a
/// JSON text with the fields those schemas ask for.
fn router_answer(model: &str) -> Value {
    let text = json!({
        "reasoning": "mock: a simple request",
        "model_choice": "flash",
        "next_speaker": "user",
    })
    .to_string();
    json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": usage(10),
        "modelVersion": model,
    })
}

/// The SSE events of one turn: a candidate per part, the last one with `finishReason: STOP`.
fn events(reply: &Reply, model: &str) -> Vec<String> {
    let parts: Vec<Value> = match reply {
        Reply::Text(chunks) => chunks.iter().map(|t| json!({"text": t})).collect(),
        Reply::ThoughtThenText { thought, text } => {
            vec![json!({"text": thought, "thought": true}), json!({"text": text})]
        }
        Reply::Call { name, args } => vec![json!({"functionCall": {"name": name, "args": args}})],
    };
    let last = parts.len().saturating_sub(1);
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let mut candidate = json!({"content": {"role": "model", "parts": [part]}, "index": 0});
            if i == last {
                candidate["finishReason"] = json!("STOP");
            }
            let chunk = json!({
                "candidates": [candidate],
                "usageMetadata": usage(i as u64 + 1),
                "modelVersion": model,
                "responseId": "mock-response",
            });
            format!("data: {chunk}\r\n\r\n")
        })
        .collect()
}
