//! The real [`GitHubApi`] over reqwest (rustls): builds each request (bearer token, API
//! version, `per_page=100` pagination, each page read by octocrab's `Page` from the `Link`
//! header), paces it against GitHub's rate limits (the decisions live in [`super::rate`]), and
//! turns answers into the typed values and errors of [`super::api`] (pull requests and the
//! App's objects through octocrab's models).
//!
//! octocrab is the GitHub library here, but its HTTP client is not the transport: its default
//! client appends `User-Agent: octocrab` to every request (ours would be a second one), its
//! typed calls read whole bodies without a cap, and its reqwest connector needs reqwest 0.13
//! (a second HTTP stack beside the LLM clients' 0.12); the policy below needs each request and
//! raw answer anyway. So requests go out through reqwest, and octocrab reads what comes back:
//! pages, pull requests, and the App's JWT and objects ([`super::app`]).
//!
//! Reads retry transient failures (lost connections, 5xx) with capped, jittered back-off.
//! Writes (POST/PATCH) go one at a time through a single lock and are sent once: a 5xx or a lost
//! connection is returned ([`GitHubError::is_uncertain`]) for the caller to re-find before
//! re-creating. A rate-limited request was not performed, so reads and writes alike are resent
//! after the wait, and the total wait is capped under the job's deadline.
//!
//! The token lives in one sensitive header value in memory: it is never logged, never part of
//! an error's text, and never sent to the host a log or artifact download redirects to (reqwest
//! drops `Authorization` on a redirect to another host or port). Every body is read with a cap.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue};
use reqwest::{Method, Response, Url};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

mod answer;
mod apps;
mod failure;

pub use self::answer::unzip;
use self::answer::{decode, page, read_capped, read_tail};
use self::failure::{status_error, unreachable};
use super::api::{
    Artifact, Comment, GitHubApi, GitHubError, Issue, Job, NewPullRequest, NewReview, Permission,
    PullFile, PullRequest, Reaction, RepoId, Review,
};
use super::rate::{self, RateHeaders, RatePolicy, RateVerdict, WaitBudget, WaitPlan};

/// The REST API version every request asks for.
pub const API_VERSION: &str = "2022-11-28";
const PER_PAGE: &str = "100";
/// Pagination stops with an error past this many pages (10 000 items).
const MAX_PAGES: usize = 100;
/// The largest JSON answer read.
const JSON_BODY_CAP: usize = 32 << 20;
/// The largest error answer read (for its `message`).
const ERROR_BODY_CAP: usize = 64 << 10;

/// How to reach GitHub.
#[derive(Clone)]
pub struct RestSettings {
    /// The API root (`GITHUB_API_URL`): `https://api.github.com`, or
    /// `https://ghes.example.com/api/v3` on Enterprise Server; a trailing slash is fine.
    pub api_url: String,
    /// The installation or workflow token, held in memory only.
    pub token: String,
    pub user_agent: String,
    /// The job's deadline: rate-limit waits end `rate.final_reserve` before it.
    pub deadline: Option<Instant>,
    pub rate: RatePolicy,
}

impl fmt::Debug for RestSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestSettings")
            .field("api_url", &self.api_url)
            .field("token", &"[hidden]")
            .field("user_agent", &self.user_agent)
            .field("deadline", &self.deadline)
            .field("rate", &self.rate)
            .finish()
    }
}

/// The GitHub REST client.
pub struct RestClient {
    http: reqwest::Client,
    base: Url,
    /// `Bearer <token>`, marked sensitive; replaced when a GitHub App's token is minted again.
    authorization: std::sync::RwLock<HeaderValue>,
    deadline: Option<Instant>,
    rate: RatePolicy,
    /// Held for the whole of each write, rate-limit waits included.
    /// One write at a time; when the last one ended.
    writes: tokio::sync::Mutex<Option<Instant>>,
    /// Milliseconds waited so far on rate limits and back-offs.
    waited_ms: AtomicU64,
    /// Unix time until which the quota is spent (0: not spent), from a successful answer.
    quota_reset: AtomicU64,
}

impl fmt::Debug for RestClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestClient")
            .field("base", &self.base.as_str())
            .field("token", &"[hidden]")
            .field("deadline", &self.deadline)
            .field("rate", &self.rate)
            .finish()
    }
}

/// Reads and writes are paced differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Read,
    Write,
}

/// One request to send.
struct Call {
    method: Method,
    url: Url,
    /// What is asked for, in words, for errors: "issue #5 of o/r".
    what: String,
    body: Option<Value>,
}

impl Call {
    fn get(url: Url, what: String) -> Self {
        Self {
            method: Method::GET,
            url,
            what,
            body: None,
        }
    }

    fn write(method: Method, url: Url, what: String, body: Value) -> Self {
        Self {
            method,
            url,
            what,
            body: Some(body),
        }
    }

    fn effect(&self) -> Effect {
        if self.method == Method::GET {
            Effect::Read
        } else {
            Effect::Write
        }
    }
}

impl RestClient {
    /// Checks the URL and the token and builds the HTTP client; sends nothing.
    pub fn new(settings: RestSettings) -> Result<Self, GitHubError> {
        let base = parse_api_url(&settings.api_url)?;
        let authorization = bearer(&settings.token)?;
        let http = reqwest::Client::builder()
            .user_agent(settings.user_agent)
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::limited(5))
            .build()
            .map_err(|error| GitHubError::Unreachable {
                url: base.to_string(),
                message: format!("cannot set up the HTTP client: {error}"),
            })?;
        Ok(Self {
            http,
            base,
            authorization: std::sync::RwLock::new(authorization),
            deadline: settings.deadline,
            rate: settings.rate,
            writes: tokio::sync::Mutex::new(None),
            waited_ms: AtomicU64::new(0),
            quota_reset: AtomicU64::new(0),
        })
    }

    /// Sends every later request with `token` instead (a GitHub App's installation token minted
    /// again before the one in use expires). Checked like the first; the old one is kept when
    /// this one is refused.
    pub fn set_token(&self, token: &str) -> Result<(), GitHubError> {
        let authorization = bearer(token)?;
        *self
            .authorization
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = authorization;
        Ok(())
    }

    fn authorization(&self) -> HeaderValue {
        self.authorization
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `{api}/repos/{owner}/{name}/{rest...}`, each segment percent-encoded.
    fn repo_url(&self, repo: &RepoId, rest: &[&str]) -> Url {
        let mut segments = vec!["repos", repo.owner.as_str(), repo.name.as_str()];
        segments.extend(rest);
        self.api_url(&segments)
    }

    /// `{api}/{segments...}`, each segment percent-encoded.
    fn api_url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// Sends a call, pacing it; answers only with a 2xx response (body unread).
    async fn send(&self, call: &Call) -> Result<Response, GitHubError> {
        let mut write_turn = match call.effect() {
            Effect::Write => Some(self.writes.lock().await),
            Effect::Read => None,
        };
        if let Some(last) = write_turn.as_deref() {
            let wait = rate::write_wait(last.map(|at| at.elapsed()), &self.rate);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        let sent = self.send_paced(call).await;
        if let Some(last) = write_turn.as_deref_mut() {
            *last = Some(Instant::now());
        }
        sent
    }

    /// [`Self::send`] once its turn has come.
    async fn send_paced(&self, call: &Call) -> Result<Response, GitHubError> {
        let mut attempt = 0;
        loop {
            self.wait_for_quota(call).await?;
            let failure = match self.request(call).send().await {
                Ok(response) if response.status().is_success() => {
                    self.note_quota(&response);
                    return Ok(response);
                }
                Ok(response) => match self.refusal(call, response).await? {
                    Some(failure) => failure,
                    None => continue,
                },
                Err(error) => unreachable(&call.url, &error),
            };
            self.again_after(call, failure, attempt).await?;
            attempt += 1;
        }
    }

    /// After failed attempt number `attempt`: waits the backoff and answers `Ok` when the call
    /// is to be sent again (a transient failure of a read, retries and wait budget left);
    /// answers the failure otherwise. Writes are never sent again.
    async fn again_after(
        &self,
        call: &Call,
        failure: GitHubError,
        attempt: u32,
    ) -> Result<(), GitHubError> {
        let transient = failure.is_uncertain() && call.effect() == Effect::Read;
        if !transient || attempt >= self.rate.read_retries {
            return Err(failure);
        }
        let pause = rate::backoff(attempt, fastrand::f64(), &self.rate);
        self.pause(pause, 0.0).await.map_err(|_| failure)
    }

    /// Remembers a quota a successful answer reported as spent.
    fn note_quota(&self, response: &Response) {
        let now = unix_now();
        if let Some(reset) = rate::exhausted_until(&rate_headers(response.headers(), now), now) {
            self.quota_reset.store(reset, Ordering::Relaxed);
        }
    }

    /// Waits out a spent quota before sending, rather than being refused (within the budget).
    async fn wait_for_quota(&self, call: &Call) -> Result<(), GitHubError> {
        let reset = self.quota_reset.load(Ordering::Relaxed);
        let now = unix_now();
        if reset <= now {
            return Ok(());
        }
        let wait = Duration::from_secs(reset - now);
        self.pause(wait, fastrand::f64())
            .await
            .map_err(|required| GitHubError::RateLimited {
                what: call.what.clone(),
                wait_secs: required.as_secs_f64().ceil() as u64,
            })?;
        self.quota_reset.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn request(&self, call: &Call) -> reqwest::RequestBuilder {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, self.authorization());
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/vnd.github+json"),
        );
        headers.insert(
            "x-github-api-version",
            HeaderValue::from_static(API_VERSION),
        );
        let builder = self
            .http
            .request(call.method.clone(), call.url.clone())
            .headers(headers);
        match &call.body {
            Some(body) => builder.json(body),
            None => builder,
        }
    }

    /// A non-2xx answer: `Ok(None)` after waiting out a rate limit (resend), `Ok(Some(error))`
    /// for any other status, `Err` when the rate-limit wait does not fit in the budget.
    async fn refusal(
        &self,
        call: &Call,
        response: Response,
    ) -> Result<Option<GitHubError>, GitHubError> {
        let status = response.status();
        let now = unix_now();
        let headers = rate_headers(response.headers(), now);
        let body = read_capped(response, ERROR_BODY_CAP, &call.what)
            .await
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        match rate::classify(status.as_u16(), &headers, &body, now, &self.rate) {
            RateVerdict::Limited { wait, .. } => match self.pause(wait, fastrand::f64()).await {
                Ok(()) => Ok(None),
                Err(required) => Err(GitHubError::RateLimited {
                    what: call.what.clone(),
                    wait_secs: required.as_secs_f64().ceil() as u64,
                }),
            },
            RateVerdict::NotLimited => Ok(Some(status_error(status, &call.what, &body))),
        }
    }

    /// Sleeps `required` plus jitter when the budget allows; else answers the required wait.
    async fn pause(&self, required: Duration, jitter: f64) -> Result<(), Duration> {
        let budget = WaitBudget {
            waited: Duration::from_millis(self.waited_ms.load(Ordering::Relaxed)),
            until_deadline: self
                .deadline
                .map(|deadline| deadline.saturating_duration_since(Instant::now())),
        };
        match rate::plan_wait(required, jitter, &budget, &self.rate) {
            WaitPlan::Sleep(wait) => {
                let millis = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                self.waited_ms.fetch_add(millis, Ordering::Relaxed);
                tokio::time::sleep(wait).await;
                Ok(())
            }
            WaitPlan::GiveUp { required } => Err(required),
        }
    }

    /// Sends a call and reads its whole body (capped); a read whose answer breaks off
    /// mid-body is sent again like any transient read failure.
    async fn fetch(&self, call: &Call, cap: usize) -> Result<(HeaderMap, Vec<u8>), GitHubError> {
        let mut attempt = 0;
        loop {
            let response = self.send(call).await?;
            let headers = response.headers().clone();
            let error = match read_capped(response, cap, &call.what).await {
                Ok(body) => return Ok((headers, body)),
                Err(error) => error,
            };
            self.again_after(call, error, attempt).await?;
            attempt += 1;
        }
    }

    async fn json<T: DeserializeOwned>(&self, call: Call) -> Result<T, GitHubError> {
        let (_, bytes) = self.fetch(&call, JSON_BODY_CAP).await?;
        decode(&bytes, &call.what)
    }

    /// Every item over all pages. Each page is read by octocrab's [`octocrab::Page`] (the
    /// `Link` header's `rel="next"`, and the items of a bare array or of the object's list,
    /// as in `{"total_count": n, "jobs": [...]}`); the bodies are read here, capped.
    async fn paginate<T: DeserializeOwned>(
        &self,
        mut url: Url,
        what: &str,
    ) -> Result<Vec<T>, GitHubError> {
        url.query_pairs_mut().append_pair("per_page", PER_PAGE);
        let mut next = Some(url);
        let mut items = Vec::new();
        for _ in 0..MAX_PAGES {
            let Some(url) = next.take() else {
                return Ok(items);
            };
            let (headers, bytes) = self
                .fetch(&Call::get(url, what.to_owned()), JSON_BODY_CAP)
                .await?;
            let mut page = page::<T>(headers, bytes, what).await?;
            next = self.next_page(page.next.take(), what)?;
            items.extend(page.take_items());
        }
        match next {
            None => Ok(items),
            Some(_) => Err(GitHubError::Decode {
                what: what.to_owned(),
                message: format!("more than {MAX_PAGES} pages"),
            }),
        }
    }

    /// The next page's URL, refused when it leaves the API's origin (the token would follow).
    fn next_page(&self, next: Option<http::Uri>, what: &str) -> Result<Option<Url>, GitHubError> {
        let Some(next) = next else {
            return Ok(None);
        };
        match Url::parse(&next.to_string()) {
            Ok(url) if url.origin() == self.base.origin() => Ok(Some(url)),
            _ => Err(GitHubError::Decode {
                what: what.to_owned(),
                message: "the next-page link points outside the API".to_owned(),
            }),
        }
    }
}

impl GitHubApi for RestClient {
    async fn permission(&self, repo: &RepoId, login: &str) -> Result<Permission, GitHubError> {
        #[derive(Deserialize)]
        struct Answer {
            permission: String,
        }
        let url = self.repo_url(repo, &["collaborators", login, "permission"]);
        let what = format!("the permission of {login} on {repo}");
        let answer: Answer = self.json(Call::get(url, what)).await?;
        Ok(Permission::parse(&answer.permission))
    }

    async fn issue(&self, repo: &RepoId, number: u64) -> Result<Issue, GitHubError> {
        let url = self.repo_url(repo, &["issues", &number.to_string()]);
        self.json(Call::get(url, format!("issue #{number} of {repo}")))
            .await
    }

    async fn comments(&self, repo: &RepoId, issue: u64) -> Result<Vec<Comment>, GitHubError> {
        let url = self.repo_url(repo, &["issues", &issue.to_string(), "comments"]);
        let what = format!("the comments of issue #{issue} of {repo}");
        self.paginate(url, &what).await
    }

    async fn create_comment(
        &self,
        repo: &RepoId,
        issue: u64,
        body: &str,
    ) -> Result<Comment, GitHubError> {
        let url = self.repo_url(repo, &["issues", &issue.to_string(), "comments"]);
        let what = format!("a new comment on issue #{issue} of {repo}");
        let body = json!({ "body": body });
        self.json(Call::write(Method::POST, url, what, body)).await
    }

    async fn update_comment(
        &self,
        repo: &RepoId,
        id: u64,
        body: &str,
    ) -> Result<Comment, GitHubError> {
        let url = self.repo_url(repo, &["issues", "comments", &id.to_string()]);
        let what = format!("comment {id} of {repo}");
        let body = json!({ "body": body });
        self.json(Call::write(Method::PATCH, url, what, body)).await
    }

    async fn react(
        &self,
        repo: &RepoId,
        comment: u64,
        reaction: Reaction,
    ) -> Result<(), GitHubError> {
        let id = comment.to_string();
        let url = self.repo_url(repo, &["issues", "comments", &id, "reactions"]);
        let what = format!("a reaction to comment {comment} of {repo}");
        let body = json!({ "content": reaction.content() });
        self.send(&Call::write(Method::POST, url, what, body))
            .await
            .map(drop)
    }

    async fn open_pull_for(
        &self,
        repo: &RepoId,
        branch: &str,
    ) -> Result<Option<PullRequest>, GitHubError> {
        let mut url = self.repo_url(repo, &["pulls"]);
        url.query_pairs_mut()
            .append_pair("head", &format!("{}:{branch}", repo.owner))
            .append_pair("state", "open")
            .append_pair("per_page", PER_PAGE);
        let what = format!("the open pull requests from {branch} in {repo}");
        let pulls: Vec<PullAnswer> = self.json(Call::get(url, what)).await?;
        Ok(pulls.into_iter().next().map(pull_request))
    }

    async fn open_pulls(&self, repo: &RepoId) -> Result<Vec<PullRequest>, GitHubError> {
        let mut url = self.repo_url(repo, &["pulls"]);
        url.query_pairs_mut().append_pair("state", "open");
        let what = format!("the open pull requests of {repo}");
        let pulls: Vec<PullAnswer> = self.paginate(url, &what).await?;
        Ok(pulls.into_iter().map(pull_request).collect())
    }

    async fn pull(&self, repo: &RepoId, number: u64) -> Result<PullRequest, GitHubError> {
        let url = self.repo_url(repo, &["pulls", &number.to_string()]);
        let what = format!("pull request #{number} of {repo}");
        let answer: PullAnswer = self.json(Call::get(url, what)).await?;
        Ok(pull_request(answer))
    }

    async fn pull_files(&self, repo: &RepoId, number: u64) -> Result<Vec<PullFile>, GitHubError> {
        let url = self.repo_url(repo, &["pulls", &number.to_string(), "files"]);
        let what = format!("the files of pull request #{number} of {repo}");
        self.paginate(url, &what).await
    }

    async fn reviews(&self, repo: &RepoId, number: u64) -> Result<Vec<Review>, GitHubError> {
        let url = self.repo_url(repo, &["pulls", &number.to_string(), "reviews"]);
        let what = format!("the reviews of pull request #{number} of {repo}");
        self.paginate(url, &what).await
    }

    async fn create_review(
        &self,
        repo: &RepoId,
        number: u64,
        review: &NewReview,
    ) -> Result<Review, GitHubError> {
        let url = self.repo_url(repo, &["pulls", &number.to_string(), "reviews"]);
        let what = format!("a review of pull request #{number} of {repo}");
        let body = serde_json::to_value(review).unwrap_or(Value::Null);
        self.json(Call::write(Method::POST, url, what, body)).await
    }

    async fn default_branch(&self, repo: &RepoId) -> Result<String, GitHubError> {
        #[derive(Deserialize)]
        struct Answer {
            default_branch: String,
        }
        let url = self.repo_url(repo, &[]);
        let answer: Answer = self
            .json(Call::get(url, format!("repository {repo}")))
            .await?;
        Ok(answer.default_branch)
    }

    async fn branch_protected(&self, repo: &RepoId, branch: &str) -> Result<bool, GitHubError> {
        #[derive(Deserialize)]
        struct Answer {
            #[serde(default)]
            protected: bool,
        }
        let mut segments = vec!["branches"];
        segments.extend(branch.split('/').filter(|part| !part.is_empty()));
        let url = self.repo_url(repo, &segments);
        let answer: Answer = self
            .json(Call::get(url, format!("branch {branch} of {repo}")))
            .await?;
        Ok(answer.protected)
    }

    async fn file_at(
        &self,
        repo: &RepoId,
        path: &str,
        git_ref: &str,
        cap: usize,
    ) -> Result<Option<String>, GitHubError> {
        let mut segments = vec!["contents"];
        segments.extend(path.split('/').filter(|part| !part.is_empty()));
        let mut url = self.repo_url(repo, &segments);
        url.query_pairs_mut().append_pair("ref", git_ref);
        let what = format!("{path} on {git_ref} of {repo}");
        let call = Call::get(url, what.clone());
        let bytes = match self
            .fetch(&call, cap.saturating_mul(2).saturating_add(4096))
            .await
        {
            Ok((_, bytes)) => bytes,
            Err(GitHubError::NotFound { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        answer::file_content(&bytes, cap, &what).map(Some)
    }

    async fn create_pull(
        &self,
        repo: &RepoId,
        pull: &NewPullRequest,
    ) -> Result<PullRequest, GitHubError> {
        let url = self.repo_url(repo, &["pulls"]);
        let what = format!("a new pull request from {} in {repo}", pull.head);
        let body = serde_json::to_value(pull).unwrap_or(Value::Null);
        let answer: PullAnswer = self
            .json(Call::write(Method::POST, url, what, body))
            .await?;
        Ok(pull_request(answer))
    }

    async fn update_pull_body(
        &self,
        repo: &RepoId,
        number: u64,
        body: &str,
    ) -> Result<PullRequest, GitHubError> {
        let url = self.repo_url(repo, &["pulls", &number.to_string()]);
        let what = format!("pull request #{number} of {repo}");
        let body = json!({ "body": body });
        let answer: PullAnswer = self
            .json(Call::write(Method::PATCH, url, what, body))
            .await?;
        Ok(pull_request(answer))
    }

    async fn jobs(&self, repo: &RepoId, run: u64) -> Result<Vec<Job>, GitHubError> {
        let mut url = self.repo_url(repo, &["actions", "runs", &run.to_string(), "jobs"]);
        url.query_pairs_mut().append_pair("filter", "latest");
        let what = format!("the jobs of run {run} of {repo}");
        self.paginate(url, &what).await
    }

    async fn job_log(&self, repo: &RepoId, job: u64, cap: usize) -> Result<String, GitHubError> {
        let url = self.repo_url(repo, &["actions", "jobs", &job.to_string(), "logs"]);
        let call = Call::get(url, format!("the log of job {job} of {repo}"));
        let response = self.send(&call).await?;
        read_tail(response, cap, &call.what).await
    }

    async fn artifacts(&self, repo: &RepoId, run: u64) -> Result<Vec<Artifact>, GitHubError> {
        let url = self.repo_url(repo, &["actions", "runs", &run.to_string(), "artifacts"]);
        let what = format!("the artifacts of run {run} of {repo}");
        self.paginate(url, &what).await
    }

    async fn artifact_files(
        &self,
        repo: &RepoId,
        artifact: u64,
        cap: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, GitHubError> {
        let id = artifact.to_string();
        let url = self.repo_url(repo, &["actions", "artifacts", &id, "zip"]);
        let call = Call::get(url, format!("artifact {artifact} of {repo}"));
        let (_, zipped) = self.fetch(&call, cap.saturating_add(1 << 20)).await?;
        let what = call.what;
        tokio::task::spawn_blocking(move || unzip(&zipped, cap, &what))
            .await
            .map_err(|error| GitHubError::Decode {
                what: format!("artifact {artifact} of {repo}"),
                message: format!("unpacking stopped: {error}"),
            })?
    }
}

/// A pull request as GitHub answers it: octocrab's model.
type PullAnswer = octocrab::models::pulls::PullRequest;

/// What the bot keeps of a pull request.
fn pull_request(answer: PullAnswer) -> PullRequest {
    use octocrab::models::IssueState;
    let state = match answer.state {
        Some(IssueState::Open) => "open",
        Some(IssueState::Closed) => "closed",
        _ => "",
    };
    let head = *answer.head;
    PullRequest {
        number: answer.number,
        html_url: answer.html_url.map(String::from).unwrap_or_default(),
        state: state.to_owned(),
        head_ref: head.ref_field,
        base_ref: answer.base.ref_field,
        body: answer.body.unwrap_or_default(),
        author: answer.user.map(|user| user.login).unwrap_or_default(),
        head_sha: head.sha,
        head_repo: head.repo.and_then(|repository| repository.full_name),
        maintainer_can_modify: answer.maintainer_can_modify.unwrap_or(false),
        draft: answer.draft.unwrap_or(false),
    }
}

fn parse_api_url(api_url: &str) -> Result<Url, GitHubError> {
    let invalid = |message: String| GitHubError::Unreachable {
        url: api_url.to_owned(),
        message,
    };
    let url = Url::parse(api_url.trim()).map_err(|error| invalid(format!("not a URL: {error}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(invalid("not an http(s) URL".to_owned()));
    }
    Ok(url)
}

fn bearer(token: &str) -> Result<HeaderValue, GitHubError> {
    let refuse = |message: &str| GitHubError::Unauthorized {
        status: 0,
        what: "the configured token".to_owned(),
        message: message.to_owned(),
    };
    if token.trim().is_empty() {
        return Err(refuse("the token is empty"));
    }
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| refuse("the token holds characters a header cannot carry"))?;
    value.set_sensitive(true);
    Ok(value)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

fn rate_headers(headers: &HeaderMap, now_unix: u64) -> RateHeaders {
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let number = |name: &str| text(name).and_then(|value| value.trim().parse::<u64>().ok());
    let retry_after = text("retry-after").and_then(|value| {
        value.trim().parse::<u64>().ok().or_else(|| {
            let date = httpdate::parse_http_date(value).ok()?;
            let at = date.duration_since(UNIX_EPOCH).ok()?.as_secs();
            Some(at.saturating_sub(now_unix))
        })
    });
    RateHeaders {
        retry_after_secs: retry_after,
        remaining: number("x-ratelimit-remaining"),
        reset_unix: number("x-ratelimit-reset"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_urls_join_with_or_without_slash_and_prefix() {
        let repo = RepoId::parse("o/r").unwrap();
        for (api, expected) in [
            (
                "https://api.github.com",
                "https://api.github.com/repos/o/r/issues/1",
            ),
            (
                "https://api.github.com/",
                "https://api.github.com/repos/o/r/issues/1",
            ),
            (
                "http://127.0.0.1:9/api/v3",
                "http://127.0.0.1:9/api/v3/repos/o/r/issues/1",
            ),
            (
                "http://127.0.0.1:9/api/v3/",
                "http://127.0.0.1:9/api/v3/repos/o/r/issues/1",
            ),
        ] {
            let client = RestClient::new(RestSettings {
                api_url: api.to_owned(),
                token: "t".to_owned(),
                user_agent: "ua".to_owned(),
                deadline: None,
                rate: RatePolicy::default(),
            })
            .unwrap();
            assert_eq!(client.repo_url(&repo, &["issues", "1"]).as_str(), expected);
        }
    }

    #[test]
    fn segments_are_percent_encoded() {
        let client = RestClient::new(RestSettings {
            api_url: "https://api.github.com".to_owned(),
            token: "t".to_owned(),
            user_agent: "ua".to_owned(),
            deadline: None,
            rate: RatePolicy::default(),
        })
        .unwrap();
        let repo = RepoId::parse("o/r").unwrap();
        let url = client.repo_url(&repo, &["collaborators", "a/../b", "permission"]);
        assert_eq!(
            url.as_str(),
            "https://api.github.com/repos/o/r/collaborators/a%2F..%2Fb/permission"
        );
    }

    #[test]
    fn a_next_page_link_to_another_host_is_refused() {
        let client = RestClient::new(RestSettings {
            api_url: "https://api.github.com".to_owned(),
            token: "t".to_owned(),
            user_agent: "ua".to_owned(),
            deadline: None,
            rate: RatePolicy::default(),
        })
        .unwrap();
        let same: http::Uri = "https://api.github.com/repositories/1/issues/1/comments?page=2"
            .parse()
            .unwrap();
        let next = client.next_page(Some(same), "c").unwrap().unwrap();
        assert_eq!(
            next.as_str(),
            "https://api.github.com/repositories/1/issues/1/comments?page=2"
        );
        let foreign: http::Uri = "https://evil.example/steal?page=2".parse().unwrap();
        assert!(client.next_page(Some(foreign), "c").is_err());
        let other_port: http::Uri = "https://api.github.com:8443/x?page=2".parse().unwrap();
        assert!(client.next_page(Some(other_port), "c").is_err());
        assert_eq!(client.next_page(None, "c").unwrap(), None);
    }

    #[test]
    fn bad_urls_and_tokens_are_refused_without_the_token() {
        let settings = |api: &str, token: &str| RestSettings {
            api_url: api.to_owned(),
            token: token.to_owned(),
            user_agent: "ua".to_owned(),
            deadline: None,
            rate: RatePolicy::default(),
        };
        assert!(RestClient::new(settings("ftp://x", "t")).is_err());
        assert!(RestClient::new(settings("not a url", "t")).is_err());
        let error = RestClient::new(settings("https://x", "ghs_secret\nvalue")).unwrap_err();
        assert!(!error.to_string().contains("ghs_secret"));
        let debug = format!("{:?}", settings("https://x", "ghs_secret"));
        assert!(!debug.contains("ghs_secret"), "{debug}");
    }
}
