//! A mock of the GitHub API endpoints `gh pr create` calls, served over TLS on 127.0.0.1 as a
//! GitHub Enterprise host (`gh` talks TLS to every host but `localhost`).
//!
//! `gh` 2.23 makes three GraphQL calls to `POST /api/graphql` (found by running it against
//! this mock with every request recorded): `RepositoryInfo` (the repository's id),
//! `PullRequestForBranch` (an open PR for the head branch: then "already exists") and the
//! `PullRequestCreate` mutation. The mock checks the token (`Authorization: token …`, else 401
//! "Bad credentials"), the repository, and — when told to expect them — the title, head and
//! base; it records every request and every pull request it created.
//!
//! The certificate is self-signed, made with the `openssl` CLI in the mock's directory; point
//! `gh` at it with `SSL_CERT_FILE` ([`MockGitHub::ca_file`]), at the host with `GH_HOST`
//! ([`MockGitHub::host`]) and give it [`MockGitHub::token`] as `GH_ENTERPRISE_TOKEN`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::tls::{TlsListener, acceptor, self_signed};

/// What the mock serves and expects.
#[derive(Debug, Clone)]
pub struct GitHubScript {
    pub owner: String,
    pub name: String,
    /// The token `gh` must send.
    pub token: String,
    /// When set, a `PullRequestCreate` with another title, head or base is answered with a
    /// GraphQL error naming the difference.
    pub expect: Option<ExpectedPullRequest>,
}

impl Default for GitHubScript {
    fn default() -> Self {
        GitHubScript {
            owner: "octo".into(),
            name: "demo".into(),
            token: "gho_mocktoken0123456789".into(),
            expect: None,
        }
    }
}

/// The pull request a test expects `gh` to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedPullRequest {
    pub title: String,
    pub head: String,
    pub base: String,
}

/// A pull request the mock created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedPullRequest {
    pub number: u64,
    pub url: String,
    pub title: String,
    pub body: String,
    pub head: String,
    pub base: String,
    pub draft: bool,
}

/// One request the mock saw: method, path and the GraphQL operation's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitHubRequest {
    pub method: String,
    pub path: String,
    pub operation: Option<String>,
    /// Whether it carried the expected token.
    pub authorized: bool,
}

#[derive(Debug, Default)]
struct Recorded {
    requests: Vec<GitHubRequest>,
    created: Vec<CreatedPullRequest>,
}

#[derive(Debug)]
struct Shared {
    script: Mutex<GitHubScript>,
    recorded: Mutex<Recorded>,
    host: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running mock; stops when dropped.
#[derive(Debug)]
pub struct MockGitHub {
    shared: Arc<Shared>,
    ca_file: PathBuf,
    task: JoinHandle<()>,
}

impl Drop for MockGitHub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockGitHub {
    /// Makes a self-signed certificate for 127.0.0.1 in `dir` and serves on a free port.
    pub async fn start(dir: &Path, script: GitHubScript) -> io::Result<MockGitHub> {
        let (cert, key) = (dir.join("mock-github-cert.pem"), dir.join("mock-github-key.pem"));
        self_signed(&cert, &key, &["IP:127.0.0.1", "DNS:localhost"])?;
        let acceptor = acceptor(&cert, &key)?;
        let tcp = TcpListener::bind("127.0.0.1:0").await?;
        let addr = tcp.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            recorded: Mutex::new(Recorded::default()),
            host: format!("127.0.0.1:{}", addr.port()),
        });
        let app = Router::new()
            .route("/api/graphql", post(graphql))
            .fallback(other)
            .with_state(shared.clone());
        let listener = TlsListener { tcp, acceptor };
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(MockGitHub { shared, ca_file: cert, task })
    }

    /// `127.0.0.1:<port>`: the value for `GH_HOST`.
    pub fn host(&self) -> String {
        self.shared.host.clone()
    }

    /// `HOST/OWNER/NAME`: the value for `gh --repo`.
    pub fn repo(&self) -> String {
        let script = lock(&self.shared.script);
        format!("{}/{}/{}", self.shared.host, script.owner, script.name)
    }

    /// The certificate to trust (`SSL_CERT_FILE`).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The token `gh` must send (`GH_ENTERPRISE_TOKEN`).
    pub fn token(&self) -> String {
        lock(&self.shared.script).token.clone()
    }

    /// Replaces what the mock serves and expects (recordings are kept).
    pub fn set_script(&self, script: GitHubScript) {
        *lock(&self.shared.script) = script;
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<GitHubRequest> {
        lock(&self.shared.recorded).requests.clone()
    }

    /// Every pull request created so far.
    pub fn created(&self) -> Vec<CreatedPullRequest> {
        lock(&self.shared.recorded).created.clone()
    }
}

/// `query Name(` / `mutation Name(` → `Name`.
fn operation_of(query: &str) -> Option<String> {
    let start = query.find("query ").map(|i| i + 6).or(query.find("mutation ").map(|i| i + 9))?;
    let name: String = query[start..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
    (!name.is_empty()).then_some(name)
}

fn graphql_error(message: String) -> Response {
    let body = json!({ "data": null, "errors": [{ "type": "UNPROCESSABLE", "message": message }] });
    (StatusCode::OK, axum::Json(body)).into_response()
}

async fn graphql(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let query = request["query"].as_str().unwrap_or_default();
    let variables = &request["variables"];
    let operation = operation_of(query);
    let script = lock(&shared.script).clone();
    let sent = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let authorized = sent == format!("token {}", script.token);
    lock(&shared.recorded).requests.push(GitHubRequest {
        method: "POST".into(),
        path: "/api/graphql".into(),
        operation: operation.clone(),
        authorized,
    });
    if !authorized {
        let body = json!({
            "message": "Bad credentials",
            "documentation_url": "https://docs.github.com/rest"
        });
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    let owner = variables["owner"].as_str().unwrap_or_default();
    let name = variables["name"].as_str().or(variables["repo"].as_str()).unwrap_or_default();
    let known = owner == script.owner && name == script.name;
    let repository = json!({
        "id": "R_mock1",
        "name": script.name,
        "owner": { "login": script.owner },
        "hasIssuesEnabled": true,
        "description": "",
        "hasWikiEnabled": false,
        "viewerPermission": "WRITE",
        "defaultBranchRef": { "name": "main" },
        "isPrivate": false,
        "parent": null,
        "mergeCommitAllowed": true,
        "rebaseMergeAllowed": true,
        "squashMergeAllowed": true,
    });
    match operation.as_deref() {
        Some("RepositoryInfo" | "PullRequestForBranch") if !known => graphql_error(format!(
            "Could not resolve to a Repository with the name '{owner}/{name}'."
        )),
        Some("RepositoryInfo") => {
            (StatusCode::OK, axum::Json(json!({ "data": { "repository": repository } })))
                .into_response()
        }
        Some("PullRequestForBranch") => {
            let head = variables["headRefName"].as_str().unwrap_or_default();
            let nodes: Vec<Value> = lock(&shared.recorded)
                .created
                .iter()
                .filter(|pr| pr.head == head)
                .map(|pr| {
                    json!({
                        "url": pr.url, "id": format!("PR_{}", pr.number), "number": pr.number,
                        "state": "OPEN", "baseRefName": pr.base, "headRefName": pr.head,
                        "isCrossRepository": false,
                        "headRepositoryOwner": { "id": "U_1", "login": script.owner }
                    })
                })
                .collect();
            let data = json!({ "repository": {
                "pullRequests": { "nodes": nodes },
                "defaultBranchRef": { "name": "main" }
            }});
            (StatusCode::OK, axum::Json(json!({ "data": data }))).into_response()
        }
        Some("PullRequestCreate") => create(&shared, &script, &variables["input"]),
        _ => {
            let what = operation.unwrap_or_else(|| "an unnamed operation".into());
            let body =
                json!({ "errors": [{ "message": format!("the mock does not serve {what}") }] });
            (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
        }
    }
}

fn create(shared: &Shared, script: &GitHubScript, input: &Value) -> Response {
    let text = |key: &str| input[key].as_str().unwrap_or_default().to_owned();
    let (title, head, base) = (text("title"), text("headRefName"), text("baseRefName"));
    if input["repositoryId"] != "R_mock1" {
        return graphql_error(format!("unknown repositoryId {}", input["repositoryId"]));
    }
    if let Some(expected) = &script.expect {
        let asked =
            ExpectedPullRequest { title: title.clone(), head: head.clone(), base: base.clone() };
        if asked != *expected {
            return graphql_error(format!(
                "the mock expected {expected:?}, gh asked for {asked:?}"
            ));
        }
    }
    let mut recorded = lock(&shared.recorded);
    let number = 1 + recorded.created.len() as u64;
    let url = format!("https://{}/{}/{}/pull/{number}", shared.host, script.owner, script.name);
    recorded.created.push(CreatedPullRequest {
        number,
        url: url.clone(),
        title,
        body: text("body"),
        head,
        base,
        draft: input["draft"].as_bool().unwrap_or(false),
    });
    let data = json!({ "createPullRequest": { "pullRequest": {
        "id": format!("PR_{number}"), "url": url, "number": number
    }}});
    (StatusCode::OK, axum::Json(json!({ "data": data }))).into_response()
}

async fn other(
    State(shared): State<Arc<Shared>>,
    method: axum::http::Method,
    uri: Uri,
) -> Response {
    lock(&shared.recorded).requests.push(GitHubRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        operation: None,
        authorized: false,
    });
    let body = json!({ "message": "Not Found (the mock serves only POST /api/graphql)" });
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}
