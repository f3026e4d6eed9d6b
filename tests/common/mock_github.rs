//! A stateful loopback mock of the slice of the GitHub REST API meta-agent uses: issues,
//! comments (paginated with `Link` headers), reactions, pull requests, collaborator
//! permissions, workflow jobs with their logs, and artifacts served zipped. Answers have the
//! real shapes (GitHub's published webhook examples, [`super::webhooks`], and docs.github.com),
//! errors are `{"message", "documentation_url"}`, and log and artifact downloads answer 302 to a
//! second "blob" server on another port, which refuses any request carrying `Authorization` (as
//! the real storage host would).
//!
//! Hand-rolled HTTP/1.1 on tokio, one request per connection (`connection: close`), on its own
//! thread and runtime, so it also serves a child `meta-agent github` process. Every request to
//! either server is recorded ([`MockGitHub::requests`]); the token the client sent is visible
//! there in the `authorization` header (no separate accessor). An optional `/api/v3` prefix is
//! accepted, as on GitHub Enterprise Server. Any owner/repository is served from one state.
//!
//! A GitHub App can be installed ([`MockGitHub::install_app`]): then `GET /app`,
//! `GET /repos/{owner}/{repo}/installation` and `POST /app/installations/{id}/access_tokens`
//! demand a JWT that verifies against the App's public key with GitHub's rules (RS256, `iss` the
//! App id, `exp` in the future and at most ten minutes ahead, `iat` not in the future), the
//! token exchange refuses repositories and permissions the installation lacks, and the token it
//! mints is accepted from then on.
//!
//! Pull requests as a person or a fork opens them can be added ([`MockGitHub::add_pull`]); with
//! the repository it serves ([`MockGitHub::serve_repository`]) the mock answers a pull request's
//! files, reviews and a file's contents on a branch from that repository (see `pulls.rs`).
//!
//! It must not be used for anything but tests: it checks no token unless [`MockGitHub::set_token`]
//! asks it to.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

mod app;
mod pulls;

pub use pulls::MockReview;

const BASE_TIME: u64 = 1_795_320_000; // 2026-11-22T04:00:00Z
const DOCS: &str = "https://docs.github.com/rest";
const REACTIONS: [&str; 8] = [
    "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
];

pub use super::http::Recorded;

impl Recorded {
    /// Whether this went to the blob (download) server: its paths start with `/blobs/`.
    pub fn is_blob(&self) -> bool {
        self.path.starts_with("/blobs/")
    }
}

/// A comment as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockComment {
    pub id: u64,
    pub author: String,
    /// `User` or `Bot`.
    pub author_type: String,
    pub body: String,
    /// RFC 3339.
    pub created_at: String,
}

/// A pull request as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockPull {
    pub number: u64,
    /// The head branch name (without `owner:`).
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    pub draft: bool,
    /// Who opened it (the bot for pull requests created through the API).
    pub author: String,
    /// `owner/name` of the repository the head lives in (a fork's for a fork's pull request);
    /// `None`: that repository was deleted (`head.repo: null`).
    pub head_repo: Option<String>,
    /// The head commit; `None`: the head branch's tip in the served repository.
    pub head_sha: Option<String>,
    pub maintainer_can_modify: bool,
}

/// A job of a workflow run.
#[derive(Debug, Clone)]
pub struct MockJob {
    pub id: u64,
    pub name: String,
    /// `Some("failure")`, `Some("success")`, ...; `None` while in progress.
    pub conclusion: Option<String>,
    /// The plain-text log served (after a redirect) at `.../actions/jobs/{id}/logs`.
    pub log: String,
}

/// An artifact of a workflow run; served as a deflated zip of `files`.
#[derive(Debug, Clone)]
pub struct MockArtifact {
    pub id: u64,
    pub name: String,
    pub files: Vec<(String, Vec<u8>)>,
}

/// A GitHub App installed on the mock's repositories.
#[derive(Debug, Clone)]
pub struct MockApp {
    pub id: u64,
    /// Its bot account is `<slug>[bot]`.
    pub slug: String,
    /// The public half of the App's key (PEM), to verify its JWTs.
    pub public_key_pem: String,
    pub installation_id: u64,
    /// The account the App is installed on.
    pub owner: String,
    /// Repository names the installation covers; empty: all of the owner's.
    pub repositories: Vec<String>,
    /// What the installation was granted: `("contents", "write")`, ...
    pub permissions: Vec<(String, String)>,
    /// The token every exchange mints.
    pub token: String,
}

/// A scripted failure for the next matching request(s).
#[derive(Debug, Clone)]
pub struct Fault {
    /// `GET`, `POST`, `PATCH`.
    pub method: &'static str,
    /// A substring of the path (with query).
    pub path_contains: String,
    /// The status answered; 0 closes the connection without answering.
    pub status: u16,
    /// Extra answer headers. The mock-only header `x-mock-cut` makes the answer announce a
    /// longer body than it sends and close the connection mid-body.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// How many matching requests fail.
    pub times: u32,
    /// Perform the request first (the write happens), then answer the fault: a 502 after
    /// GitHub created the comment.
    pub perform_first: bool,
}

impl Fault {
    /// One `status` answer with GitHub's error body for it, not performed.
    pub fn status(method: &'static str, path_contains: &str, status: u16) -> Self {
        let message = match status {
            401 => "Bad credentials",
            403 => "Forbidden",
            404 => "Not Found",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            502 => "Server Error",
            503 => "Service Unavailable",
            _ => "Error",
        };
        Self {
            method,
            path_contains: path_contains.to_string(),
            status,
            headers: Vec::new(),
            body: json!({"message": message, "documentation_url": DOCS}).to_string(),
            times: 1,
            perform_first: false,
        }
    }

    /// A secondary rate limit (403), as GitHub words it.
    pub fn secondary_limit(method: &'static str, path_contains: &str) -> Self {
        Self {
            body: json!({
                "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000:0000:0000.",
                "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            })
            .to_string(),
            ..Self::status(method, path_contains, 403)
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn times(mut self, times: u32) -> Self {
        self.times = times;
        self
    }

    pub fn performed(mut self) -> Self {
        self.perform_first = true;
        self
    }
}

#[derive(Debug, Clone)]
struct StoredIssue {
    title: String,
    body: String,
    author: String,
    labels: Vec<String>,
}

#[derive(Debug, Clone)]
struct StoredComment {
    issue: u64,
    comment: MockComment,
    updated_at: String,
}

#[derive(Debug, Clone)]
struct StoredRun {
    jobs: Vec<MockJob>,
    artifacts: Vec<(MockArtifact, Vec<u8>)>,
}

#[derive(Debug)]
struct State {
    bot_login: String,
    /// Tokens accepted (none: any token).
    tokens: Vec<String>,
    app: Option<MockApp>,
    permissions: BTreeMap<String, String>,
    issues: BTreeMap<u64, StoredIssue>,
    comments: Vec<StoredComment>,
    pulls: Vec<MockPull>,
    reactions: Vec<(u64, String, String)>,
    runs: BTreeMap<u64, StoredRun>,
    reviews: Vec<MockReview>,
    /// The bare repository the contents and a pull request's files are read from.
    served: Option<std::path::PathBuf>,
    /// Branches GitHub protects.
    protected: Vec<String>,
    requests: Vec<Recorded>,
    faults: Vec<Fault>,
    next_id: u64,
    clock: u64,
    latency: std::time::Duration,
    /// Tokens the next App token exchanges mint instead of the App's, with their lifetimes.
    minted_next: std::collections::VecDeque<(String, u64)>,
}

impl State {
    fn new() -> Self {
        Self {
            bot_login: "github-actions[bot]".to_string(),
            tokens: Vec::new(),
            app: None,
            permissions: BTreeMap::new(),
            issues: BTreeMap::new(),
            comments: Vec::new(),
            pulls: Vec::new(),
            reactions: Vec::new(),
            runs: BTreeMap::new(),
            reviews: Vec::new(),
            served: None,
            protected: Vec::new(),
            requests: Vec::new(),
            faults: Vec::new(),
            next_id: 2_000_000_001,
            clock: 0,
            latency: std::time::Duration::ZERO,
            minted_next: std::collections::VecDeque::new(),
        }
    }

    /// The next id and an increasing timestamp.
    fn stamp(&mut self) -> (u64, String) {
        self.next_id += 1;
        self.clock += 60;
        (self.next_id, rfc3339(BASE_TIME + self.clock))
    }

    fn add_comment(&mut self, issue: u64, author: &str, author_type: &str, body: &str) -> u64 {
        let (id, created_at) = self.stamp();
        self.comments.push(StoredComment {
            issue,
            comment: MockComment {
                id,
                author: author.to_string(),
                author_type: author_type.to_string(),
                body: body.to_string(),
                created_at: created_at.clone(),
            },
            updated_at: created_at,
        });
        id
    }

    fn account_type(&self, login: &str) -> &'static str {
        if login == self.bot_login || login.ends_with("[bot]") {
            "Bot"
        } else {
            "User"
        }
    }

    fn next_number(&self) -> u64 {
        let issues = self.issues.keys().max().copied().unwrap_or(0);
        let pulls = self.pulls.iter().map(|p| p.number).max().unwrap_or(0);
        issues.max(pulls) + 1
    }
}

/// The running mock (API and blob servers). Stops when dropped.
pub struct MockGitHub {
    /// The API root, `http://127.0.0.1:PORT` (append `/api/v3` to try the GHES layout).
    pub url: String,
    /// The download host the API redirects logs and artifacts to (another port).
    pub blob_url: String,
    state: Arc<Mutex<State>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for MockGitHub {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

impl MockGitHub {
    /// Starts both servers on 127.0.0.1, on a thread of their own.
    pub fn start() -> Self {
        let api = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let blob = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        api.set_nonblocking(true).expect("nonblocking");
        blob.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", api.local_addr().expect("addr"));
        let blob_url = format!("http://{}", blob.local_addr().expect("addr"));
        let state = Arc::new(Mutex::new(State::new()));
        let (shutdown, stop) = tokio::sync::oneshot::channel();
        let servers = Servers {
            url: url.clone(),
            blob_url: blob_url.clone(),
            state: state.clone(),
        };
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(servers.run(api, blob, stop));
        });
        Self {
            url,
            blob_url,
            state,
            shutdown: Some(shutdown),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `login`'s role: `admin`, `maintain`, `write`, `triage`, `read`. Unknown users answer
    /// `none` (as GitHub does for a non-collaborator on a public repository). Like GitHub, the
    /// `permission` field maps `maintain` to `write` and `triage` to `read`; `role_name` keeps
    /// the role.
    pub fn set_permission(&self, login: &str, permission: &str) {
        let mut state = self.state();
        state
            .permissions
            .insert(login.to_string(), permission.to_string());
    }

    pub fn add_issue(&self, number: u64, title: &str, body: &str, author: &str) {
        let issue = StoredIssue {
            title: title.to_string(),
            body: body.to_string(),
            author: author.to_string(),
            labels: Vec::new(),
        };
        self.state().issues.insert(number, issue);
    }

    /// Labels an issue added with [`MockGitHub::add_issue`].
    pub fn add_label(&self, issue: u64, label: &str) {
        if let Some(stored) = self.state().issues.get_mut(&issue) {
            stored.labels.push(label.to_string());
        }
    }

    /// Adds a comment (created_at increasing with each comment); returns its id.
    pub fn add_comment(&self, issue: u64, author: &str, author_type: &str, body: &str) -> u64 {
        self.state().add_comment(issue, author, author_type, body)
    }

    /// An issue's comments, oldest first.
    pub fn comments(&self, issue: u64) -> Vec<MockComment> {
        let state = self.state();
        state
            .comments
            .iter()
            .filter(|stored| stored.issue == issue)
            .map(|stored| stored.comment.clone())
            .collect()
    }

    pub fn pulls(&self) -> Vec<MockPull> {
        self.state().pulls.clone()
    }

    /// A pull request a person (or a fork) opened; its number must be new.
    pub fn add_pull(&self, pull: MockPull) {
        self.state().pulls.push(pull);
    }

    /// Every review posted, oldest first.
    pub fn reviews(&self) -> Vec<MockReview> {
        self.state().reviews.clone()
    }

    /// Answers contents and pull request files from the bare repository `bare`.
    pub fn serve_repository(&self, bare: &std::path::Path) {
        self.state().served = Some(bare.to_owned());
    }

    /// Makes `branch` a protected branch (`GET .../branches/{branch}` says `protected: true`).
    pub fn protect_branch(&self, branch: &str) {
        self.state().protected.push(branch.to_string());
    }

    /// Marks a pull request as a draft or ready for review.
    pub fn set_pull_draft(&self, number: u64, draft: bool) {
        let mut guard = self.state();
        if let Some(pull) = guard.pulls.iter_mut().find(|p| p.number == number) {
            pull.draft = draft;
        }
    }

    /// Closes (or reopens) a pull request.
    pub fn set_pull_state(&self, number: u64, state: &str) {
        let mut guard = self.state();
        if let Some(pull) = guard.pulls.iter_mut().find(|p| p.number == number) {
            pull.state = state.to_string();
        }
    }

    /// `(comment id, content)` of every reaction, in order.
    pub fn reactions(&self) -> Vec<(u64, String)> {
        let state = self.state();
        state
            .reactions
            .iter()
            .map(|(id, content, _)| (*id, content.clone()))
            .collect()
    }

    /// Every request received so far by either server.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state().requests.clone()
    }

    /// The author of comments, reactions and pull requests created through the API (type `Bot`
    /// when it ends in `[bot]`); default `github-actions[bot]`.
    pub fn set_bot_login(&self, login: &str) {
        self.state().bot_login = login.to_string();
    }

    /// Requires `Authorization: Bearer <token>` (else 401 "Bad credentials"); tokens an
    /// installed App mints are accepted too.
    pub fn set_token(&self, token: &str) {
        self.state().tokens = vec![token.to_string()];
    }

    /// Installs a GitHub App (see the module doc for what it then answers).
    pub fn install_app(&self, app: MockApp) {
        self.state().app = Some(app);
    }

    /// The next App token exchange mints `token`, expiring `lifetime_secs` after it (GitHub's
    /// are an hour); queued calls apply in order, then the App's own token (an hour) again.
    pub fn mint_next(&self, token: &str, lifetime_secs: u64) {
        self.state()
            .minted_next
            .push_back((token.to_string(), lifetime_secs));
    }

    /// Delays every answer of the API server by `latency` (requests are recorded on arrival,
    /// answered after the delay; the delay holds no lock, so answers can overlap).
    pub fn set_latency(&self, latency: std::time::Duration) {
        self.state().latency = latency;
    }

    /// Queues a fault; the first queued fault matching a request applies.
    pub fn fail_next(&self, fault: Fault) {
        self.state().faults.push(fault);
    }

    pub fn add_workflow_run(&self, run_id: u64, jobs: Vec<MockJob>, artifacts: Vec<MockArtifact>) {
        let artifacts = artifacts
            .into_iter()
            .map(|artifact| {
                let zipped = zip_files(&artifact.files);
                (artifact, zipped)
            })
            .collect();
        self.state()
            .runs
            .insert(run_id, StoredRun { jobs, artifacts });
    }
}

/// A deflated zip archive of `files` (names written as given, even `../x` or `/x`).
pub fn zip_files(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, contents) in files {
        writer
            .start_file(name.as_str(), options)
            .expect("zip entry");
        writer.write_all(contents).expect("zip write");
    }
    writer.finish().expect("zip finish").into_inner()
}

/// What both servers share.
#[derive(Clone)]
struct Servers {
    url: String,
    blob_url: String,
    state: Arc<Mutex<State>>,
}

/// An answer to write.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: vec![(
                "content-type".into(),
                "application/json; charset=utf-8".into(),
            )],
            body: body.to_string().into_bytes(),
        }
    }

    fn error(status: u16, message: &str) -> Self {
        Self::json(
            status,
            json!({"message": message, "documentation_url": DOCS}),
        )
    }

    fn redirect(location: String) -> Self {
        Self {
            status: 302,
            headers: vec![("location".into(), location)],
            body: Vec::new(),
        }
    }

    fn bytes(content_type: &str, body: Vec<u8>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body,
        }
    }
}

impl Servers {
    async fn run(
        self,
        api: std::net::TcpListener,
        blob: std::net::TcpListener,
        mut stop: tokio::sync::oneshot::Receiver<()>,
    ) {
        let api = TcpListener::from_std(api).expect("listener");
        let blob = TcpListener::from_std(blob).expect("listener");
        loop {
            tokio::select! {
                _ = &mut stop => return,
                Ok((stream, _)) = api.accept() => {
                    tokio::spawn(self.clone().serve(stream));
                }
                Ok((stream, _)) = blob.accept() => {
                    tokio::spawn(self.clone().serve(stream));
                }
            }
        }
    }

    async fn serve(self, mut stream: TcpStream) {
        let Some(request) = super::http::read_request(&mut stream).await else {
            return;
        };
        let latency = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.requests.push(request.clone());
            if request.is_blob() {
                std::time::Duration::ZERO
            } else {
                state.latency
            }
        };
        tokio::time::sleep(latency).await;
        let answer = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            self.answer(&mut state, &request)
        };
        if let Some(answer) = answer {
            write_answer(&mut stream, answer).await;
        }
    }

    /// `None`: drop the connection.
    fn answer(&self, state: &mut State, request: &Recorded) -> Option<Answer> {
        let fault = take_fault(state, request);
        match fault {
            Some(fault) if !fault.perform_first => fault_answer(fault),
            Some(fault) => {
                let _ = self.route(state, request);
                fault_answer(fault)
            }
            None => Some(self.route(state, request)),
        }
    }

    fn route(&self, state: &mut State, request: &Recorded) -> Answer {
        if request.is_blob() {
            return self.blob(state, request);
        }
        let target = Target::parse(&request.path);
        let segments: Vec<&str> = target.segments.iter().map(String::as_str).collect();
        let ctx = Ctx {
            api: format!("{}{}", self.url, target.prefix),
            blob: self.blob_url.clone(),
            target: &target,
        };
        let method = request.method.as_str();
        if let Some(answer) = app::route(state, &ctx, request, &segments) {
            return answer;
        }
        if let Some(refusal) = check_token(state, request) {
            return refusal;
        }
        if let Some(answer) = pulls::route(state, &ctx, request, &segments) {
            return answer;
        }
        match (method, segments.as_slice()) {
            ("GET", ["repos", owner, repo, "collaborators", login, "permission"]) => {
                permission(state, &ctx.repo(owner, repo), login)
            }
            ("GET", ["repos", owner, repo, "issues", number]) => {
                get_issue(state, &ctx.repo(owner, repo), number)
            }
            ("GET", ["repos", owner, repo, "issues", number, "comments"]) => {
                list_comments(state, &ctx.repo(owner, repo), number)
            }
            ("POST", ["repos", owner, repo, "issues", number, "comments"]) => {
                create_comment(state, &ctx.repo(owner, repo), number, request)
            }
            ("PATCH", ["repos", owner, repo, "issues", "comments", id]) => {
                update_comment(state, &ctx.repo(owner, repo), id, request)
            }
            ("POST", ["repos", owner, repo, "issues", "comments", id, "reactions"]) => {
                react(state, &ctx.repo(owner, repo), id, request)
            }
            ("GET", ["repos", owner, repo, "pulls"]) => list_pulls(state, &ctx.repo(owner, repo)),
            ("POST", ["repos", owner, repo, "pulls"]) => {
                create_pull(state, &ctx.repo(owner, repo), request)
            }
            ("PATCH", ["repos", owner, repo, "pulls", number]) => {
                update_pull(state, &ctx.repo(owner, repo), number, request)
            }
            ("GET", ["repos", owner, repo, "actions", "runs", run, "jobs"]) => {
                list_jobs(state, &ctx.repo(owner, repo), run)
            }
            ("GET", ["repos", _, _, "actions", "jobs", id, "logs"]) => job_log(state, &ctx, id),
            ("GET", ["repos", owner, repo, "actions", "runs", run, "artifacts"]) => {
                list_artifacts(state, &ctx.repo(owner, repo), run)
            }
            ("GET", ["repos", _, _, "actions", "artifacts", id, "zip"]) => {
                artifact_zip(state, &ctx, id)
            }
            _ => Answer::error(404, "Not Found"),
        }
    }

    /// The download host: refuses credentials, like a pre-signed storage URL does.
    fn blob(&self, state: &State, request: &Recorded) -> Answer {
        if request.header("authorization").is_some() {
            return Answer::bytes(
                "application/xml",
                b"<Error><Code>InvalidAuthenticationInfo</Code></Error>".to_vec(),
            )
            .with_status(400);
        }
        let path = request.path.split('?').next().unwrap_or_default();
        if let Some(job) = path.strip_prefix("/blobs/logs/") {
            let log = state
                .runs
                .values()
                .flat_map(|run| &run.jobs)
                .find(|j| j.id.to_string() == job);
            return match log {
                Some(job) => Answer::bytes("text/plain", job.log.clone().into_bytes()),
                None => Answer::error(404, "BlobNotFound"),
            };
        }
        let artifact = path
            .strip_prefix("/blobs/artifacts/")
            .and_then(|rest| rest.strip_suffix(".zip"));
        let zipped = state
            .runs
            .values()
            .flat_map(|run| &run.artifacts)
            .find(|(a, _)| Some(a.id.to_string().as_str()) == artifact);
        match zipped {
            Some((_, bytes)) => Answer::bytes("application/zip", bytes.clone()),
            None => Answer::error(404, "BlobNotFound"),
        }
    }
}

impl Answer {
    fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    fn with_header(mut self, name: &str, value: String) -> Self {
        self.headers.push((name.to_string(), value));
        self
    }
}

fn take_fault(state: &mut State, request: &Recorded) -> Option<Fault> {
    let index = state.faults.iter().position(|fault| {
        fault.times > 0
            && fault.method.eq_ignore_ascii_case(&request.method)
            && request.path.contains(&fault.path_contains)
    })?;
    let fault = &mut state.faults[index];
    fault.times -= 1;
    let taken = fault.clone();
    if fault.times == 0 {
        state.faults.remove(index);
    }
    Some(taken)
}

fn fault_answer(fault: Fault) -> Option<Answer> {
    if fault.status == 0 {
        return None;
    }
    let mut answer = Answer::json(fault.status, Value::Null);
    answer.body = fault.body.into_bytes();
    answer.headers.extend(fault.headers);
    Some(answer)
}

fn check_token(state: &State, request: &Recorded) -> Option<Answer> {
    let Some(sent) = request.header("authorization") else {
        return Some(Answer::error(401, "Requires authentication"));
    };
    if state.tokens.is_empty() {
        return None;
    }
    let token = sent
        .strip_prefix("Bearer ")
        .or_else(|| sent.strip_prefix("token "))
        .unwrap_or_default();
    (!state.tokens.iter().any(|accepted| accepted == token))
        .then(|| Answer::error(401, "Bad credentials"))
}

/// The request's path split and decoded, its query, and the GHES prefix if used.
struct Target {
    prefix: &'static str,
    path: String,
    segments: Vec<String>,
    query: Vec<(String, String)>,
}

impl Target {
    fn parse(raw: &str) -> Self {
        let (path, query) = raw.split_once('?').unwrap_or((raw, ""));
        let (prefix, path) = match path.strip_prefix("/api/v3") {
            Some(rest) => ("/api/v3", rest),
            None => ("", path),
        };
        let segments = path
            .trim_matches('/')
            .split('/')
            .map(|segment| percent_decode(segment, false))
            .collect();
        let query = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (percent_decode(key, true), percent_decode(value, true))
            })
            .collect();
        Self {
            prefix,
            path: path.to_string(),
            segments,
            query,
        }
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

fn percent_decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (byte, hex) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                index += 3;
                continue;
            }
            (b'+', _) if plus_is_space => out.push(b' '),
            _ => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// Where links in answers point.
struct Ctx<'a> {
    /// The API root as the client used it (with `/api/v3` when it did).
    api: String,
    blob: String,
    target: &'a Target,
}

impl<'a> Ctx<'a> {
    fn repo(&'a self, owner: &str, name: &str) -> Repo<'a> {
        Repo {
            ctx: self,
            owner: owner.to_string(),
            name: name.to_string(),
        }
    }
}

/// The repository a request names, for URLs in answers.
struct Repo<'a> {
    ctx: &'a Ctx<'a>,
    owner: String,
    name: String,
}

impl Repo<'_> {
    fn api(&self) -> String {
        format!("{}/repos/{}/{}", self.ctx.api, self.owner, self.name)
    }

    fn html(&self) -> String {
        format!("https://github.com/{}/{}", self.owner, self.name)
    }

    fn json(&self) -> Value {
        json!({
            "id": stable_id(&format!("{}/{}", self.owner, self.name)),
            "node_id": "R_kgDOMock",
            "name": self.name,
            "full_name": format!("{}/{}", self.owner, self.name),
            "private": false,
            "owner": user_json(&self.ctx.api, &self.owner, "User"),
            "html_url": self.html(),
            "url": self.api(),
            "default_branch": "main",
        })
    }
}

fn stable_id(text: &str) -> u64 {
    text.bytes().fold(1_469_598_103u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(1_099_511_628_211) % 100_000_000
    }) + 1_000
}

/// An account as the API shows it (`simple-user`), every link included.
fn user_json(api: &str, login: &str, kind: &str) -> Value {
    let id = stable_id(login);
    let user = format!("{api}/users/{}", percent_encode(login));
    json!({
        "login": login,
        "id": id,
        "node_id": format!("MDQ6VXNlcj{id}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "",
        "url": user,
        "html_url": format!("https://github.com/{}", percent_encode(login)),
        "followers_url": format!("{user}/followers"),
        "following_url": format!("{user}/following{{/other_user}}"),
        "gists_url": format!("{user}/gists{{/gist_id}}"),
        "starred_url": format!("{user}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{user}/subscriptions"),
        "organizations_url": format!("{user}/orgs"),
        "repos_url": format!("{user}/repos"),
        "events_url": format!("{user}/events{{/privacy}}"),
        "received_events_url": format!("{user}/received_events"),
        "type": kind,
        "user_view_type": "public",
        "site_admin": false,
    })
}

fn association(state: &State, login: &str) -> &'static str {
    match state.permissions.get(login).map(String::as_str) {
        Some("admin" | "maintain" | "write") => "COLLABORATOR",
        _ => "NONE",
    }
}

fn number_of(text: &str) -> Option<u64> {
    text.parse().ok()
}

fn body_field(request: &Recorded, field: &str) -> Option<String> {
    let body: Value = serde_json::from_str(&request.body).ok()?;
    body.get(field).and_then(Value::as_str).map(str::to_string)
}

fn invalid(field: &str, code: &str) -> Answer {
    Answer::json(
        422,
        json!({
            "message": "Validation Failed",
            "errors": [{"resource": "Issue", "code": code, "field": field}],
            "documentation_url": DOCS,
            "status": "422",
        }),
    )
}

/// As GitHub: a login that is not a collaborator is a 404 ("is not a user" / not found).
fn permission(state: &State, repo: &Repo<'_>, login: &str) -> Answer {
    let Some(role) = state.permissions.get(login).cloned() else {
        return Answer::error(404, "Not Found");
    };
    let legacy = match role.as_str() {
        "maintain" => "write",
        "triage" => "read",
        other => other,
    };
    let mut user = user_json(&repo.ctx.api, login, state.account_type(login));
    user["role_name"] = json!(role);
    Answer::json(
        200,
        json!({"permission": legacy, "role_name": role, "user": user}),
    )
}

fn issue_json(state: &State, repo: &Repo<'_>, number: u64, issue: &StoredIssue) -> Value {
    let comments = state.comments.iter().filter(|c| c.issue == number).count();
    let body = (!issue.body.is_empty()).then_some(issue.body.as_str());
    json!({
        "url": format!("{}/issues/{number}", repo.api()),
        "repository_url": repo.api(),
        "comments_url": format!("{}/issues/{number}/comments", repo.api()),
        "html_url": format!("{}/issues/{number}", repo.html()),
        "id": stable_id(&format!("issue{number}")),
        "node_id": "I_kwDOMock",
        "number": number,
        "title": issue.title,
        "user": user_json(&repo.ctx.api, &issue.author, state.account_type(&issue.author)),
        "labels": issue.labels.iter().map(|name| json!({
            "id": stable_id(name),
            "node_id": "LA_kwDOMock",
            "url": format!("{}/labels/{name}", repo.api()),
            "name": name,
            "color": "d73a4a",
            "default": false,
            "description": null,
        })).collect::<Vec<_>>(),
        "state": "open",
        "locked": false,
        "assignee": null,
        "assignees": [],
        "comments": comments,
        "created_at": rfc3339(BASE_TIME),
        "updated_at": rfc3339(BASE_TIME),
        "closed_at": null,
        "author_association": association(state, &issue.author),
        "draft": false,
        "body": body,
    })
}

fn get_issue(state: &State, repo: &Repo<'_>, number: &str) -> Answer {
    let Some(number) = number_of(number) else {
        return Answer::error(404, "Not Found");
    };
    if let Some(issue) = state.issues.get(&number) {
        return Answer::json(200, issue_json(state, repo, number, issue));
    }
    let Some(pull) = state.pulls.iter().find(|p| p.number == number) else {
        return Answer::error(404, "Not Found");
    };
    let as_issue = StoredIssue {
        title: pull.title.clone(),
        body: pull.body.clone(),
        author: pull.author.clone(),
        labels: Vec::new(),
    };
    let mut value = issue_json(state, repo, number, &as_issue);
    value["pull_request"] = json!({"url": format!("{}/pulls/{number}", repo.api())});
    Answer::json(200, value)
}

fn comment_json(state: &State, repo: &Repo<'_>, stored: &StoredComment) -> Value {
    let comment = &stored.comment;
    let id = comment.id;
    json!({
        "url": format!("{}/issues/comments/{id}", repo.api()),
        "html_url": format!("{}/issues/{}#issuecomment-{id}", repo.html(), stored.issue),
        "issue_url": format!("{}/issues/{}", repo.api(), stored.issue),
        "id": id,
        "node_id": format!("IC_kwDOMock{id}"),
        // A deleted account: the schema's `nullable-simple-user` is `null`.
        "user": if comment.author.is_empty() { Value::Null } else { user_json(&repo.ctx.api, &comment.author, &comment.author_type) },
        "created_at": comment.created_at,
        "updated_at": stored.updated_at,
        "author_association": association(state, &comment.author),
        "body": comment.body,
        "reactions": {"url": format!("{}/issues/comments/{id}/reactions", repo.api()), "total_count": 0},
        "performed_via_github_app": null,
    })
}

fn issue_exists(state: &State, number: u64) -> bool {
    state.issues.contains_key(&number) || state.pulls.iter().any(|p| p.number == number)
}

/// One page of `items` (query `page`, `per_page`: default 30, at most 100), with the `Link`
/// header GitHub sends when there is more than one page.
fn paginate<T: Clone>(items: &[T], ctx: &Ctx<'_>) -> (Vec<T>, Option<String>) {
    let per_page = ctx
        .target
        .param("per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page = ctx
        .target
        .param("page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let start = (page - 1).saturating_mul(per_page).min(items.len());
    let end = (start + per_page).min(items.len());
    let slice = items[start..end].to_vec();
    if last == 1 {
        return (slice, None);
    }
    let link_to = |target_page: usize, rel: &str| {
        let mut query: Vec<String> = ctx
            .target
            .query
            .iter()
            .filter(|(key, _)| key != "page")
            .map(|(key, value)| format!("{}={}", percent_encode(key), percent_encode(value)))
            .collect();
        query.push(format!("page={target_page}"));
        format!(
            "<{}{}?{}>; rel=\"{rel}\"",
            ctx.api,
            ctx.target.path,
            query.join("&")
        )
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(link_to(page - 1, "prev"));
    }
    if page < last {
        links.push(link_to(page + 1, "next"));
        links.push(link_to(last, "last"));
    }
    if page > 1 {
        links.push(link_to(1, "first"));
    }
    (slice, Some(links.join(", ")))
}

fn with_link(answer: Answer, link: Option<String>) -> Answer {
    match link {
        Some(link) => answer.with_header("link", link),
        None => answer,
    }
}

fn list_comments(state: &State, repo: &Repo<'_>, number: &str) -> Answer {
    let Some(number) = number_of(number).filter(|n| issue_exists(state, *n)) else {
        return Answer::error(404, "Not Found");
    };
    let all: Vec<&StoredComment> = state
        .comments
        .iter()
        .filter(|c| c.issue == number)
        .collect();
    let (page, link) = paginate(&all, repo.ctx);
    let values: Vec<Value> = page.iter().map(|c| comment_json(state, repo, c)).collect();
    with_link(Answer::json(200, Value::Array(values)), link)
}

/// GitHub's cap on comment and pull request bodies, in characters.
pub const MAX_BODY_CHARS: usize = 65_536;

/// GitHub's answer to a body over [`MAX_BODY_CHARS`].
fn too_long(resource: &str, body: &str) -> Option<Answer> {
    (body.chars().count() > MAX_BODY_CHARS).then(|| {
        Answer::json(
            422,
            json!({
                "message": "Validation Failed",
                "errors": [{
                    "resource": resource,
                    "code": "custom",
                    "field": "body",
                    "message": format!("body is too long (maximum is {MAX_BODY_CHARS} characters)"),
                }],
                "documentation_url": DOCS,
                "status": "422",
            }),
        )
    })
}

fn create_comment(state: &mut State, repo: &Repo<'_>, number: &str, request: &Recorded) -> Answer {
    let Some(number) = number_of(number).filter(|n| issue_exists(state, *n)) else {
        return Answer::error(404, "Not Found");
    };
    let Some(body) = body_field(request, "body") else {
        return invalid("body", "missing_field");
    };
    if let Some(refusal) = too_long("IssueComment", &body) {
        return refusal;
    }
    let bot = state.bot_login.clone();
    let kind = state.account_type(&bot);
    let id = state.add_comment(number, &bot, kind, &body);
    let stored = state.comments.iter().find(|c| c.comment.id == id);
    match stored {
        Some(stored) => Answer::json(201, comment_json(state, repo, stored)),
        None => Answer::error(500, "Server Error"),
    }
}

fn update_comment(state: &mut State, repo: &Repo<'_>, id: &str, request: &Recorded) -> Answer {
    let Some(body) = body_field(request, "body") else {
        return invalid("body", "missing_field");
    };
    if let Some(refusal) = too_long("IssueComment", &body) {
        return refusal;
    }
    let (_, now) = state.stamp();
    let Some(stored) = state
        .comments
        .iter_mut()
        .find(|c| Some(c.comment.id) == number_of(id))
    else {
        return Answer::error(404, "Not Found");
    };
    stored.comment.body = body;
    stored.updated_at = now;
    let stored = stored.clone();
    Answer::json(200, comment_json(state, repo, &stored))
}

fn react(state: &mut State, repo: &Repo<'_>, id: &str, request: &Recorded) -> Answer {
    let Some(id) = number_of(id).filter(|id| state.comments.iter().any(|c| c.comment.id == *id))
    else {
        return Answer::error(404, "Not Found");
    };
    let content = body_field(request, "content").unwrap_or_default();
    if !REACTIONS.contains(&content.as_str()) {
        return invalid("content", "invalid");
    }
    let bot = state.bot_login.clone();
    let existing = state
        .reactions
        .iter()
        .any(|(c, what, who)| *c == id && *what == content && *who == bot);
    let status = if existing { 200 } else { 201 };
    if !existing {
        state.reactions.push((id, content.clone(), bot.clone()));
    }
    let (reaction_id, created_at) = state.stamp();
    let user = user_json(&repo.ctx.api, &bot, state.account_type(&bot));
    Answer::json(
        status,
        json!({"id": reaction_id, "node_id": "REA_mock", "user": user, "content": content, "created_at": created_at}),
    )
}

fn pull_json(state: &State, repo: &Repo<'_>, pull: &MockPull) -> Value {
    let number = pull.number;
    let sha = pulls::head_sha(state, pull);
    let author = user_json(
        &repo.ctx.api,
        &pull.author,
        state.account_type(&pull.author),
    );
    let owner = user_json(&repo.ctx.api, &repo.owner, "User");
    let (head_owner, head_repo) = match pull.head_repo.as_deref().and_then(|r| r.split_once('/')) {
        Some((owner, name)) => (owner.to_string(), repo.ctx.repo(owner, name).json()),
        None => (pull.author.clone(), Value::Null),
    };
    let head_user = user_json(&repo.ctx.api, &head_owner, "User");
    json!({
        "url": format!("{}/pulls/{number}", repo.api()),
        "id": stable_id(&format!("pull{number}")),
        "node_id": "PR_kwDOMock",
        "html_url": format!("{}/pull/{number}", repo.html()),
        "diff_url": format!("{}/pull/{number}.diff", repo.html()),
        "patch_url": format!("{}/pull/{number}.patch", repo.html()),
        "issue_url": format!("{}/issues/{number}", repo.api()),
        "number": number,
        "state": pull.state,
        "locked": false,
        "title": pull.title,
        "user": author,
        "body": pull.body,
        "created_at": rfc3339(BASE_TIME),
        "updated_at": rfc3339(BASE_TIME),
        "closed_at": null,
        "merged_at": null,
        "merge_commit_sha": null,
        "draft": pull.draft,
        "head": {
            "label": format!("{head_owner}:{}", pull.head),
            "ref": pull.head,
            "sha": sha,
            "user": head_user,
            "repo": head_repo,
        },
        "maintainer_can_modify": pull.maintainer_can_modify,
        "base": {
            "label": format!("{}:{}", repo.owner, pull.base),
            "ref": pull.base,
            "sha": "0".repeat(40),
            "user": owner,
            "repo": repo.json(),
        },
        "author_association": "NONE",
    })
}

/// `owner:branch` or `branch` → the branch, when the owner is this repository's.
fn head_branch(head: &str, owner: &str) -> Option<String> {
    match head.split_once(':') {
        Some((head_owner, branch)) => (head_owner == owner).then(|| branch.to_string()),
        None => Some(head.to_string()),
    }
}

fn list_pulls(state: &State, repo: &Repo<'_>) -> Answer {
    let target = repo.ctx.target;
    let wanted_state = target.param("state").unwrap_or("open");
    let head = target
        .param("head")
        .map(|head| head_branch(head, &repo.owner));
    let base = target.param("base");
    let pulls: Vec<&MockPull> = state
        .pulls
        .iter()
        .rev()
        .filter(|p| wanted_state == "all" || p.state == wanted_state)
        .filter(|p| {
            // `head=owner:branch` names the branch in the owner's repository: a fork's branch of
            // the same name is not it.
            let owned = p
                .head_repo
                .as_deref()
                .is_some_and(|r| r.split('/').next() == Some(repo.owner.as_str()));
            head.as_ref()
                .is_none_or(|h| h.as_deref() == Some(p.head.as_str()) && owned)
        })
        .filter(|p| base.is_none_or(|b| b == p.base))
        .collect();
    let (page, link) = paginate(&pulls, repo.ctx);
    let values: Vec<Value> = page.iter().map(|p| pull_json(state, repo, p)).collect();
    with_link(Answer::json(200, Value::Array(values)), link)
}

fn create_pull(state: &mut State, repo: &Repo<'_>, request: &Recorded) -> Answer {
    let field = |name: &str| body_field(request, name);
    let (Some(title), Some(head), Some(base)) = (field("title"), field("head"), field("base"))
    else {
        return invalid("head", "missing_field");
    };
    let Some(branch) = head_branch(&head, &repo.owner) else {
        return invalid("head", "invalid");
    };
    if let Some(refusal) = too_long("PullRequest", &field("body").unwrap_or_default()) {
        return refusal;
    }
    if state
        .pulls
        .iter()
        .any(|p| p.state == "open" && p.head == branch)
    {
        return Answer::json(
            422,
            json!({
                "message": "Validation Failed",
                "errors": [{
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": format!("A pull request already exists for {}:{branch}.", repo.owner),
                }],
                "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
                "status": "422",
            }),
        );
    }
    let draft = serde_json::from_str::<Value>(&request.body)
        .ok()
        .and_then(|body| body.get("draft").and_then(Value::as_bool))
        .unwrap_or(false);
    let pull = MockPull {
        number: state.next_number(),
        head: branch,
        base,
        title,
        body: field("body").unwrap_or_default(),
        state: "open".to_string(),
        draft,
        author: state.bot_login.clone(),
        head_repo: Some(format!("{}/{}", repo.owner, repo.name)),
        head_sha: None,
        maintainer_can_modify: false,
    };
    state.pulls.push(pull.clone());
    Answer::json(201, pull_json(state, repo, &pull))
}

fn update_pull(state: &mut State, repo: &Repo<'_>, number: &str, request: &Recorded) -> Answer {
    let body = body_field(request, "body");
    if let Some(refusal) = body
        .as_deref()
        .and_then(|body| too_long("PullRequest", body))
    {
        return refusal;
    }
    let title = body_field(request, "title");
    let Some(pull) = state
        .pulls
        .iter_mut()
        .find(|p| Some(p.number) == number_of(number))
    else {
        return Answer::error(404, "Not Found");
    };
    if let Some(body) = body {
        pull.body = body;
    }
    if let Some(title) = title {
        pull.title = title;
    }
    let pull = pull.clone();
    Answer::json(200, pull_json(state, repo, &pull))
}

fn job_json(repo: &Repo<'_>, run: u64, job: &MockJob) -> Value {
    let status = if job.conclusion.is_some() {
        "completed"
    } else {
        "in_progress"
    };
    let id = job.id;
    json!({
        "id": id,
        "run_id": run,
        "run_url": format!("{}/actions/runs/{run}", repo.api()),
        "run_attempt": 1,
        "node_id": format!("CR_kwDOMock{id}"),
        "head_sha": "0".repeat(40),
        "url": format!("{}/actions/jobs/{id}", repo.api()),
        // Nullable in the schema: a job still in progress has none here.
        "html_url": job.conclusion.as_ref().map(|_| format!("{}/actions/runs/{run}/job/{id}", repo.html())),
        "status": status,
        "conclusion": job.conclusion,
        "created_at": rfc3339(BASE_TIME),
        "started_at": rfc3339(BASE_TIME),
        "completed_at": job.conclusion.as_ref().map(|_| rfc3339(BASE_TIME + 120)),
        "name": job.name,
        "steps": [],
        "check_run_url": format!("{}/check-runs/{id}", repo.api()),
        "labels": ["ubuntu-latest"],
        "runner_id": 1,
        "runner_name": "GitHub Actions 1",
        "runner_group_id": 1,
        "runner_group_name": "GitHub Actions",
        "workflow_name": "CI",
        "head_branch": "main",
    })
}

fn list_jobs(state: &State, repo: &Repo<'_>, run: &str) -> Answer {
    let Some((run_id, run)) = number_of(run).and_then(|id| Some((id, state.runs.get(&id)?))) else {
        return Answer::error(404, "Not Found");
    };
    let (page, link) = paginate(&run.jobs, repo.ctx);
    let jobs: Vec<Value> = page.iter().map(|job| job_json(repo, run_id, job)).collect();
    let body = json!({"total_count": run.jobs.len(), "jobs": jobs});
    with_link(Answer::json(200, body), link)
}

fn job_log(state: &State, ctx: &Ctx<'_>, id: &str) -> Answer {
    let known = state
        .runs
        .values()
        .flat_map(|run| &run.jobs)
        .any(|job| Some(job.id) == number_of(id));
    if !known {
        return Answer::error(404, "Not Found");
    }
    Answer::redirect(format!("{}/blobs/logs/{id}?sig=mock-signature", ctx.blob))
}

fn list_artifacts(state: &State, repo: &Repo<'_>, run: &str) -> Answer {
    let Some((run_id, run)) = number_of(run).and_then(|id| Some((id, state.runs.get(&id)?))) else {
        return Answer::error(404, "Not Found");
    };
    let (page, link) = paginate(&run.artifacts, repo.ctx);
    let artifacts: Vec<Value> = page
        .iter()
        .map(|(artifact, zipped)| {
            let id = artifact.id;
            json!({
                "id": id,
                "node_id": format!("MDg6QXJ0aWZhY3Q{id}"),
                "name": artifact.name,
                "size_in_bytes": zipped.len(),
                "url": format!("{}/actions/artifacts/{id}", repo.api()),
                "archive_download_url": format!("{}/actions/artifacts/{id}/zip", repo.api()),
                "expired": false,
                "digest": null,
                "created_at": rfc3339(BASE_TIME),
                "updated_at": rfc3339(BASE_TIME),
                "expires_at": rfc3339(BASE_TIME + 90 * 86_400),
                "workflow_run": {"id": run_id, "repository_id": 1, "head_repository_id": 1, "head_branch": "main", "head_sha": "0".repeat(40)},
            })
        })
        .collect();
    let body = json!({"total_count": run.artifacts.len(), "artifacts": artifacts});
    with_link(Answer::json(200, body), link)
}

fn artifact_zip(state: &State, ctx: &Ctx<'_>, id: &str) -> Answer {
    let known = state
        .runs
        .values()
        .flat_map(|run| &run.artifacts)
        .any(|(artifact, _)| Some(artifact.id) == number_of(id));
    if !known {
        return Answer::error(404, "Not Found");
    }
    Answer::redirect(format!(
        "{}/blobs/artifacts/{id}.zip?sig=mock-signature",
        ctx.blob
    ))
}

/// `YYYY-MM-DDTHH:MM:SSZ` for unix seconds (civil-from-days, proleptic Gregorian).
fn rfc3339(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let seconds = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds / 3_600,
        seconds % 3_600 / 60,
        seconds % 60
    )
}

async fn write_answer(stream: &mut TcpStream, answer: Answer) {
    let cut = answer.headers.iter().any(|(name, _)| name == "x-mock-cut");
    let announced = answer.body.len() + if cut { 1_000 } else { 0 };
    let mut head = format!(
        "HTTP/1.1 {} Mock\r\ncontent-length: {announced}\r\nconnection: close\r\nx-github-api-version-selected: 2022-11-28\r\n",
        answer.status,
    );
    for (name, value) in answer
        .headers
        .iter()
        .filter(|(name, _)| name != "x-mock-cut")
    {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(&answer.body).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}
