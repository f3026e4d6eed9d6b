//! The GitHub REST client ([`RestClient`]) against the loopback mock GitHub: the shape of every
//! request (method, path, query, headers with the API version, JSON body) and the decoded
//! answers; pagination over many pages; collaborator permissions as GitHub words them; reads
//! retried and writes sent once on 5xx or a lost connection; rate limits (retry-after,
//! exhausted quota, secondary limits, waits past the cap or the deadline); friendly errors
//! that never carry the token; log and artifact downloads through a redirect to another host
//! that never sees the token; zip-bomb and path-escape refusal.

use std::time::{Duration, Instant};

use meta_agent::github::api::{NewPullRequest, Reaction};
use meta_agent::github::rate::RatePolicy;
use meta_agent::github::rest::{RestClient, RestSettings};
use meta_agent::github::{GitHubApi, GitHubError, Permission, RepoId};

use crate::common::mock_github::{Fault, MockArtifact, MockGitHub, MockJob, Recorded};

const TOKEN: &str = "ghs_CANARYtoken0123456789abcdef";

fn repo() -> RepoId {
    RepoId::parse("octo/widgets").expect("repo id")
}

/// Small waits so the suite stays fast; no jitter so timings are predictable.
fn fast_policy() -> RatePolicy {
    RatePolicy {
        secondary_min_wait: Duration::from_secs(1),
        max_total_wait: Duration::from_secs(20),
        final_reserve: Duration::ZERO,
        jitter_fraction: 0.0,
        read_retries: 2,
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(40),
        write_spacing: Duration::ZERO,
    }
}

fn client_with(api_url: &str, token: &str, rate: RatePolicy) -> RestClient {
    RestClient::new(RestSettings {
        api_url: api_url.to_string(),
        token: token.to_string(),
        user_agent: "meta-agent-tests".to_string(),
        deadline: None,
        rate,
    })
    .expect("client")
}

fn client(mock: &MockGitHub) -> RestClient {
    client_with(&mock.url, TOKEN, fast_policy())
}

fn api_requests(mock: &MockGitHub, method: &str) -> Vec<Recorded> {
    mock.requests()
        .into_iter()
        .filter(|r| r.method == method && !r.is_blob())
        .collect()
}

fn assert_api_headers(request: &Recorded) {
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(request.header("authorization"), Some(bearer.as_str()));
    assert_eq!(
        request.header("accept"),
        Some("application/vnd.github+json")
    );
    assert_eq!(request.header("x-github-api-version"), Some("2022-11-28"));
    assert_eq!(request.header("user-agent"), Some("meta-agent-tests"));
}

#[tokio::test]
async fn an_issue_is_read_with_the_api_headers_and_decoded() {
    let mock = MockGitHub::start();
    mock.add_issue(
        7,
        "Tests fail on main",
        "The parser rejects `1e3`.",
        "alice",
    );
    mock.add_label(7, "agent");
    mock.add_issue(8, "No body", "", "bob");
    let client = client(&mock);

    let issue = client.issue(&repo(), 7).await.expect("issue");
    assert_eq!(issue.number, 7);
    assert_eq!(issue.title, "Tests fail on main");
    assert_eq!(issue.body, "The parser rejects `1e3`.");
    assert_eq!(issue.user.login, "alice");
    assert!(!issue.user.is_bot());
    assert_eq!(issue.state, "open");
    assert_eq!(issue.labels.len(), 1);
    assert_eq!(issue.labels[0].name, "agent");
    assert_eq!(issue.html_url, "https://github.com/octo/widgets/issues/7");
    let empty = client
        .issue(&repo(), 8)
        .await
        .expect("issue with a null body");
    assert_eq!(empty.body, "");

    let gets = api_requests(&mock, "GET");
    assert_eq!(gets[0].path, "/repos/octo/widgets/issues/7");
    assert_api_headers(&gets[0]);
}

#[tokio::test]
async fn a_missing_issue_is_not_found_by_name() {
    let mock = MockGitHub::start();
    let error = client(&mock).issue(&repo(), 99).await.unwrap_err();
    assert!(matches!(error, GitHubError::NotFound { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "issue #99 of octo/widgets: not found on GitHub (404)"
    );
}

#[tokio::test]
async fn the_enterprise_server_prefix_and_a_trailing_slash_are_kept() {
    let mock = MockGitHub::start();
    mock.add_issue(1, "t", "b", "alice");
    let client = client_with(&format!("{}/api/v3/", mock.url), TOKEN, fast_policy());
    client.issue(&repo(), 1).await.expect("issue");
    assert_eq!(
        mock.requests()[0].path,
        "/api/v3/repos/octo/widgets/issues/1"
    );
}

#[tokio::test]
async fn comments_are_read_over_every_page_oldest_first() {
    let mock = MockGitHub::start();
    mock.add_issue(3, "t", "b", "alice");
    let ids: Vec<u64> = (0..250)
        .map(|n| mock.add_comment(3, "alice", "User", &format!("comment {n}")))
        .collect();

    let comments = client(&mock).comments(&repo(), 3).await.expect("comments");
    assert_eq!(comments.len(), 250);
    assert_eq!(comments.iter().map(|c| c.id).collect::<Vec<_>>(), ids);
    assert_eq!(comments[249].body, "comment 249");
    assert_eq!(comments[0].user.login, "alice");
    assert!(comments[0].created_at < comments[1].created_at);
    assert!(comments[0].html_url.contains("#issuecomment-"));

    let paths: Vec<String> = api_requests(&mock, "GET")
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(
        paths,
        [
            "/repos/octo/widgets/issues/3/comments?per_page=100",
            "/repos/octo/widgets/issues/3/comments?per_page=100&page=2",
            "/repos/octo/widgets/issues/3/comments?per_page=100&page=3",
        ]
    );
}

#[tokio::test]
async fn comments_are_created_and_edited_as_the_bot() {
    let mock = MockGitHub::start();
    mock.add_issue(4, "t", "b", "alice");
    let client = client(&mock);

    let created = client
        .create_comment(&repo(), 4, "Working on it <!-- meta-agent:status -->")
        .await
        .expect("created");
    assert_eq!(created.user.login, "github-actions[bot]");
    assert!(created.user.is_bot());
    assert_eq!(created.body, "Working on it <!-- meta-agent:status -->");
    let edited = client
        .update_comment(&repo(), created.id, "Done")
        .await
        .expect("edited");
    assert_eq!(edited.id, created.id);
    assert_eq!(edited.body, "Done");

    let post = &api_requests(&mock, "POST")[0];
    assert_eq!(post.path, "/repos/octo/widgets/issues/4/comments");
    assert_eq!(
        post.json(),
        serde_json::json!({"body": "Working on it <!-- meta-agent:status -->"})
    );
    assert_api_headers(post);
    let patch = &api_requests(&mock, "PATCH")[0];
    assert_eq!(
        patch.path,
        format!("/repos/octo/widgets/issues/comments/{}", created.id)
    );
    assert_eq!(patch.json(), serde_json::json!({"body": "Done"}));
    let stored = mock.comments(4);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].body, "Done");
    assert_eq!(stored[0].author_type, "Bot");
}

#[tokio::test]
async fn a_reaction_is_posted_with_its_content_word() {
    let mock = MockGitHub::start();
    mock.add_issue(4, "t", "b", "alice");
    let id = mock.add_comment(4, "alice", "User", "/agent fix");
    client(&mock)
        .react(&repo(), id, Reaction::Eyes)
        .await
        .expect("reacted");
    assert_eq!(mock.reactions(), [(id, "eyes".to_string())]);
    let post = &api_requests(&mock, "POST")[0];
    assert_eq!(
        post.path,
        format!("/repos/octo/widgets/issues/comments/{id}/reactions")
    );
    assert_eq!(post.json(), serde_json::json!({"content": "eyes"}));
}

#[tokio::test]
async fn permissions_are_read_as_github_words_them() {
    let mock = MockGitHub::start();
    for (login, role) in [
        ("writer", "write"),
        ("reader", "read"),
        ("keeper", "maintain"),
        ("sorter", "triage"),
        ("boss", "admin"),
    ] {
        mock.set_permission(login, role);
    }
    let client = client(&mock);
    let mut seen = Vec::new();
    for login in ["writer", "reader", "keeper", "sorter", "boss"] {
        seen.push(client.permission(&repo(), login).await.expect("permission"));
    }
    // Not a collaborator: GitHub answers 404, which the step reads as no permission.
    match client.permission(&repo(), "stranger").await {
        Err(GitHubError::NotFound { .. }) => seen.push(Permission::None),
        other => panic!("a stranger's permission is GitHub's 404: {other:?}"),
    }
    // GitHub's `permission` field maps maintain to write and triage to read.
    assert_eq!(
        seen,
        [
            Permission::Write,
            Permission::Read,
            Permission::Write,
            Permission::Read,
            Permission::Admin,
            Permission::None,
        ]
    );
    assert_eq!(
        mock.requests()[0].path,
        "/repos/octo/widgets/collaborators/writer/permission"
    );
}

#[tokio::test]
async fn pull_requests_are_found_by_head_created_once_and_updated() {
    let mock = MockGitHub::start();
    let client = client(&mock);
    let branch = "meta-agent/issue-7";
    assert_eq!(
        client.open_pull_for(&repo(), branch).await.expect("none"),
        None
    );

    let new = NewPullRequest {
        title: "Fix the parser".to_string(),
        body: "Closes #7".to_string(),
        head: branch.to_string(),
        base: "main".to_string(),
        draft: false,
    };
    let created = client.create_pull(&repo(), &new).await.expect("created");
    assert_eq!(created.head_ref, branch);
    assert_eq!(created.base_ref, "main");
    assert_eq!(created.state, "open");
    assert_eq!(
        created.html_url,
        format!("https://github.com/octo/widgets/pull/{}", created.number)
    );
    let found = client.open_pull_for(&repo(), branch).await.expect("found");
    assert_eq!(found, Some(created.clone()));

    let again = client.create_pull(&repo(), &new).await.unwrap_err();
    assert!(
        matches!(again, GitHubError::Http { status: 422, .. }),
        "{again:?}"
    );
    assert!(
        again
            .to_string()
            .contains("A pull request already exists for octo:meta-agent/issue-7."),
        "{again}"
    );

    let updated = client
        .update_pull_body(&repo(), created.number, "Closes #7\n\nGates: all green")
        .await
        .expect("updated");
    assert_eq!(updated.body, "Closes #7\n\nGates: all green");

    let gets = api_requests(&mock, "GET");
    assert_eq!(
        gets[0].path,
        "/repos/octo/widgets/pulls?head=octo%3Ameta-agent%2Fissue-7&state=open&per_page=100"
    );
    let post = &api_requests(&mock, "POST")[0];
    assert_eq!(
        post.json(),
        serde_json::json!({"title": "Fix the parser", "body": "Closes #7", "head": branch, "base": "main", "draft": false})
    );
    let patch = &api_requests(&mock, "PATCH")[0];
    assert_eq!(
        patch.path,
        format!("/repos/octo/widgets/pulls/{}", created.number)
    );
    assert_eq!(mock.pulls().len(), 1);
}

#[tokio::test]
async fn a_closed_pull_request_is_not_reused() {
    let mock = MockGitHub::start();
    let client = client(&mock);
    let new = NewPullRequest {
        title: "t".to_string(),
        body: "b".to_string(),
        head: "fix".to_string(),
        base: "main".to_string(),
        draft: true,
    };
    let first = client.create_pull(&repo(), &new).await.expect("created");
    mock.set_pull_state(first.number, "closed");
    assert_eq!(
        client.open_pull_for(&repo(), "fix").await.expect("read"),
        None
    );
    let second = client
        .create_pull(&repo(), &new)
        .await
        .expect("created again");
    assert_ne!(second.number, first.number);
    assert!(mock.pulls()[1].draft);
}

#[tokio::test]
async fn writes_go_one_at_a_time_and_reads_do_not_wait_for_each_other() {
    let mock = MockGitHub::start();
    mock.add_issue(9, "t", "b", "alice");
    mock.set_latency(Duration::from_millis(300));
    let client = client(&mock);
    let repo = repo();
    let started = Instant::now();
    let (a, b, c) = tokio::join!(
        client.create_comment(&repo, 9, "a"),
        client.create_comment(&repo, 9, "b"),
        client.create_comment(&repo, 9, "c"),
    );
    let writes = started.elapsed();
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    assert!(writes >= Duration::from_millis(900), "{writes:?}");
    let started = Instant::now();
    let (a, b, c) = tokio::join!(
        client.issue(&repo, 9),
        client.issue(&repo, 9),
        client.issue(&repo, 9),
    );
    let reads = started.elapsed();
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    assert!(reads < Duration::from_millis(850), "{reads:?}");
    assert_eq!(mock.comments(9).len(), 3);
}

#[tokio::test]
async fn a_read_is_retried_after_server_errors() {
    let mock = MockGitHub::start();
    mock.add_issue(5, "t", "b", "alice");
    mock.fail_next(Fault::status("GET", "/issues/5", 502).times(2));
    let issue = client(&mock).issue(&repo(), 5).await.expect("third try");
    assert_eq!(issue.number, 5);
    assert_eq!(api_requests(&mock, "GET").len(), 3);
}

#[tokio::test]
async fn a_read_cut_mid_answer_is_read_again() {
    let mock = MockGitHub::start();
    mock.add_issue(5, "t", "b", "alice");
    let mut fault = Fault::status("GET", "/issues/5", 200).header("x-mock-cut", "1");
    fault.body = r#"{"number": 5, "title": "#.to_string();
    mock.fail_next(fault);
    let issue = client(&mock).issue(&repo(), 5).await.expect("second read");
    assert_eq!(issue.title, "t");
    assert_eq!(api_requests(&mock, "GET").len(), 2);
}

#[tokio::test]
async fn a_read_gives_up_after_its_retries() {
    let mock = MockGitHub::start();
    mock.add_issue(5, "t", "b", "alice");
    mock.fail_next(Fault::status("GET", "/issues/5", 503).times(10));
    let error = client(&mock).issue(&repo(), 5).await.unwrap_err();
    assert!(
        matches!(error, GitHubError::Http { status: 503, .. }),
        "{error:?}"
    );
    assert!(error.is_uncertain());
    assert_eq!(api_requests(&mock, "GET").len(), 3);
}

#[tokio::test]
async fn a_write_is_sent_once_on_a_server_error_even_when_it_happened() {
    let mock = MockGitHub::start();
    mock.add_issue(6, "t", "b", "alice");
    mock.fail_next(Fault::status("POST", "/issues/6/comments", 502).performed());
    let error = client(&mock)
        .create_comment(&repo(), 6, "status")
        .await
        .unwrap_err();
    assert!(error.is_uncertain(), "{error:?}");
    assert_eq!(api_requests(&mock, "POST").len(), 1);
    // GitHub did create it: the caller must re-find before re-creating.
    assert_eq!(mock.comments(6).len(), 1);
}

#[tokio::test]
async fn a_write_is_sent_once_when_the_connection_drops() {
    let mock = MockGitHub::start();
    mock.add_issue(6, "t", "b", "alice");
    let mut fault = Fault::status("PATCH", "/issues/comments/", 0);
    fault.perform_first = true;
    mock.fail_next(fault);
    let id = mock.add_comment(6, "github-actions[bot]", "Bot", "old");
    let error = client(&mock)
        .update_comment(&repo(), id, "new")
        .await
        .unwrap_err();
    assert!(
        matches!(error, GitHubError::Unreachable { .. }),
        "{error:?}"
    );
    assert!(error.is_uncertain());
    assert_eq!(api_requests(&mock, "PATCH").len(), 1);
}

#[tokio::test]
async fn retry_after_is_honoured_and_the_write_then_happens_once() {
    let mock = MockGitHub::start();
    mock.add_issue(6, "t", "b", "alice");
    mock.fail_next(
        Fault::status("POST", "/issues/6/comments", 429)
            .header("retry-after", "1")
            .header("x-ratelimit-remaining", "0"),
    );
    let started = Instant::now();
    client(&mock)
        .create_comment(&repo(), 6, "status")
        .await
        .expect("created after the wait");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(api_requests(&mock, "POST").len(), 2);
    assert_eq!(mock.comments(6).len(), 1);
}

#[tokio::test]
async fn an_exhausted_quota_waits_for_the_reset() {
    let mock = MockGitHub::start();
    mock.add_issue(5, "t", "b", "alice");
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 2;
    mock.fail_next(
        Fault::status("GET", "/issues/5", 403)
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", &reset.to_string()),
    );
    let started = Instant::now();
    client(&mock)
        .issue(&repo(), 5)
        .await
        .expect("read after reset");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(api_requests(&mock, "GET").len(), 2);
}

#[tokio::test]
async fn a_secondary_limit_waits_at_least_the_minimum() {
    let mock = MockGitHub::start();
    mock.add_issue(6, "t", "b", "alice");
    mock.fail_next(Fault::secondary_limit("POST", "/issues/6/comments"));
    let policy = RatePolicy {
        secondary_min_wait: Duration::from_millis(1500),
        ..fast_policy()
    };
    let started = Instant::now();
    client_with(&mock.url, TOKEN, policy)
        .create_comment(&repo(), 6, "status")
        .await
        .expect("created after the wait");
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(mock.comments(6).len(), 1);
}

#[tokio::test]
async fn a_wait_past_the_cap_gives_up_at_once() {
    let mock = MockGitHub::start();
    mock.add_issue(5, "t", "b", "alice");
    mock.fail_next(Fault::status("GET", "/issues/5", 429).header("retry-after", "3600"));
    let started = Instant::now();
    let error = client(&mock).issue(&repo(), 5).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    match &error {
        GitHubError::RateLimited { wait_secs, .. } => assert_eq!(*wait_secs, 3600),
        other => panic!("expected RateLimited, got {other:?}"),
    }
    assert!(!error.is_uncertain());
}

#[tokio::test]
async fn the_deadline_reserve_leaves_time_for_a_final_status() {
    let mock = MockGitHub::start();
    mock.add_issue(6, "t", "b", "alice");
    mock.fail_next(Fault::status("POST", "/comments", 429).header("retry-after", "5"));
    let client = RestClient::new(RestSettings {
        api_url: mock.url.clone(),
        token: TOKEN.to_string(),
        user_agent: "meta-agent-tests".to_string(),
        deadline: Some(Instant::now() + Duration::from_secs(30)),
        rate: RatePolicy {
            final_reserve: Duration::from_secs(28),
            ..fast_policy()
        },
    })
    .expect("client");
    let started = Instant::now();
    let error = client.create_comment(&repo(), 6, "x").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(error, GitHubError::RateLimited { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("deadline"), "{error}");
    assert_eq!(mock.comments(6).len(), 0);
}

#[tokio::test]
async fn a_refused_token_reads_plainly_and_never_shows_the_token() {
    let mock = MockGitHub::start();
    mock.set_token("ghs_the_right_one");
    mock.add_issue(5, "t", "b", "alice");
    let error = client(&mock).issue(&repo(), 5).await.unwrap_err();
    assert!(
        matches!(error, GitHubError::Unauthorized { status: 401, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "GitHub refused the token (401) on issue #5 of octo/widgets: Bad credentials"
    );
    assert_eq!(api_requests(&mock, "GET").len(), 1, "a 401 is not retried");
}

#[tokio::test]
async fn a_forbidden_write_is_unauthorized_with_githubs_message() {
    let mock = MockGitHub::start();
    mock.add_issue(6, "t", "b", "alice");
    let mut fault = Fault::status("POST", "/issues/6/comments", 403);
    fault.body = r#"{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest/issues/comments#create-an-issue-comment","status":"403"}"#.to_string();
    mock.fail_next(fault);
    let error = client(&mock)
        .create_comment(&repo(), 6, "x")
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with(": Resource not accessible by integration"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unreachable_api_names_the_url_and_the_cause() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let error = client_with(&url, TOKEN, fast_policy())
        .issue(&repo(), 1)
        .await
        .unwrap_err();
    assert!(
        matches!(error, GitHubError::Unreachable { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains(&url), "{text}");
    assert!(text.contains("connection refused"), "{text}");
}

#[tokio::test]
async fn no_error_text_carries_the_token() {
    let mock = MockGitHub::start();
    mock.add_issue(6, "t", "b", "alice");
    mock.fail_next(Fault::status("GET", "/issues/6", 500).times(5));
    mock.fail_next(Fault::status("POST", "/comments", 502));
    mock.fail_next(Fault::status("GET", "/issues/7", 429).header("retry-after", "999"));
    let client = client(&mock);
    let mut errors = vec![
        client.issue(&repo(), 6).await.unwrap_err(),
        client.create_comment(&repo(), 6, TOKEN).await.unwrap_err(),
        client.issue(&repo(), 7).await.unwrap_err(),
        client.issue(&repo(), 404).await.unwrap_err(),
    ];
    mock.set_token("other");
    errors.push(client.comments(&repo(), 6).await.unwrap_err());
    let unreachable = client_with("http://127.0.0.1:1", TOKEN, fast_policy());
    errors.push(unreachable.issue(&repo(), 1).await.unwrap_err());
    for error in &errors {
        assert!(!error.to_string().contains(TOKEN), "{error}");
        assert!(!format!("{error:?}").contains(TOKEN), "{error:?}");
    }
    assert!(!format!("{client:?}").contains(TOKEN));
}

fn failing_run(mock: &MockGitHub) {
    let log = format!(
        "{}\n##[error]Process completed with exit code 101.\n",
        "2026-11-22T04:00:00.0000000Z running tests\n".repeat(200)
    );
    mock.add_workflow_run(
        42,
        vec![
            MockJob {
                id: 901,
                name: "test (ubuntu-latest)".to_string(),
                conclusion: Some("failure".to_string()),
                log,
            },
            MockJob {
                id: 902,
                name: "lint".to_string(),
                conclusion: Some("success".to_string()),
                log: "ok\n".to_string(),
            },
        ],
        vec![MockArtifact {
            id: 77,
            name: "junit".to_string(),
            files: vec![
                ("reports/junit.xml".to_string(), b"<testsuites/>".to_vec()),
                ("../escape.txt".to_string(), b"nope".to_vec()),
                ("/etc/absolute.txt".to_string(), b"nope".to_vec()),
                ("summary.txt".to_string(), "é ok".as_bytes().to_vec()),
            ],
        }],
    );
}

#[tokio::test]
async fn jobs_and_artifacts_of_a_run_are_listed() {
    let mock = MockGitHub::start();
    failing_run(&mock);
    let client = client(&mock);
    let jobs = client.jobs(&repo(), 42).await.expect("jobs");
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].id, 901);
    assert_eq!(jobs[0].conclusion.as_deref(), Some("failure"));
    assert_eq!(
        jobs[0].html_url,
        "https://github.com/octo/widgets/actions/runs/42/job/901"
    );
    let artifacts = client.artifacts(&repo(), 42).await.expect("artifacts");
    assert_eq!(artifacts.len(), 1);
    assert_eq!(artifacts[0].name, "junit");
    assert!(artifacts[0].size_in_bytes > 0);
    assert!(!artifacts[0].expired);
    let paths: Vec<String> = api_requests(&mock, "GET")
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(
        paths,
        [
            "/repos/octo/widgets/actions/runs/42/jobs?filter=latest&per_page=100",
            "/repos/octo/widgets/actions/runs/42/artifacts?per_page=100",
        ]
    );
}

#[tokio::test]
async fn a_job_log_follows_the_redirect_without_the_token() {
    let mock = MockGitHub::start();
    failing_run(&mock);
    let client = client(&mock);
    let log = client.job_log(&repo(), 901, 1 << 20).await.expect("log");
    assert!(log.ends_with("##[error]Process completed with exit code 101.\n"));
    assert!(log.starts_with("2026-11-22T04:00:00"));

    let requests = mock.requests();
    let api = requests.iter().find(|r| !r.is_blob()).expect("api request");
    assert_eq!(api.path, "/repos/octo/widgets/actions/jobs/901/logs");
    assert_api_headers(api);
    let blob = requests.iter().find(|r| r.is_blob()).expect("blob request");
    assert!(blob.path.starts_with("/blobs/logs/901?"));
    assert_eq!(blob.header("authorization"), None, "{:?}", blob.headers);
    assert_ne!(blob.header("host"), api.header("host"));
}

#[tokio::test]
async fn a_job_log_keeps_only_its_tail() {
    let mock = MockGitHub::start();
    mock.add_workflow_run(
        1,
        vec![MockJob {
            id: 5,
            name: "t".to_string(),
            conclusion: Some("failure".to_string()),
            log: format!("{}éé-the end", "x".repeat(300_000)),
        }],
        Vec::new(),
    );
    let tail = client(&mock).job_log(&repo(), 5, 10).await.expect("log");
    // The last 10 bytes start inside the first `é`: the cut character is dropped.
    assert_eq!(tail, "é-the end");
}

#[tokio::test]
async fn artifact_files_are_unzipped_and_escaping_paths_skipped() {
    let mock = MockGitHub::start();
    failing_run(&mock);
    let files = client(&mock)
        .artifact_files(&repo(), 77, 1 << 20)
        .await
        .expect("files");
    assert_eq!(
        files,
        [
            ("reports/junit.xml".to_string(), b"<testsuites/>".to_vec()),
            ("summary.txt".to_string(), "é ok".as_bytes().to_vec()),
        ]
    );
    let blob = mock
        .requests()
        .into_iter()
        .find(|r| r.is_blob())
        .expect("blob");
    assert!(blob.path.starts_with("/blobs/artifacts/77.zip?"));
    assert_eq!(blob.header("authorization"), None);
}

#[tokio::test]
async fn a_zip_bomb_is_refused() {
    let mock = MockGitHub::start();
    mock.add_workflow_run(
        2,
        Vec::new(),
        vec![MockArtifact {
            id: 66,
            name: "bomb".to_string(),
            files: vec![("zeros.bin".to_string(), vec![0u8; 8 << 20])],
        }],
    );
    let error = client(&mock)
        .artifact_files(&repo(), 66, 1 << 20)
        .await
        .unwrap_err();
    assert!(matches!(error, GitHubError::Decode { .. }), "{error:?}");
    assert!(
        error.to_string().contains("more than 1048576 bytes"),
        "{error}"
    );
}

/// The mock's answers carry every field the real webhook objects carry for a comment, its
/// author and an issue (GitHub's published examples, when installed).
#[tokio::test]
async fn mock_answers_have_the_real_shapes() {
    let test = "mock_answers_have_the_real_shapes";
    let Some(examples) = crate::common::webhooks::WebhookExamples::load(test) else {
        return;
    };
    let real = examples.first("issue_comment", "created", |e| e["action"] == "created");
    let mock = MockGitHub::start();
    mock.add_issue(1, "t", "b", "alice");
    mock.add_comment(1, "alice", "User", "hi");
    let http = reqwest::Client::new();
    let get = |path: String| {
        let request = http.get(format!("{}{path}", mock.url)).bearer_auth("t");
        async move {
            let response = request.send().await.expect("get");
            response.json::<serde_json::Value>().await.expect("json")
        }
    };
    let comments = get("/repos/o/r/issues/1/comments".to_string()).await;
    let issue = get("/repos/o/r/issues/1".to_string()).await;
    let keys = |value: &serde_json::Value| -> Vec<String> {
        value.as_object().expect("object").keys().cloned().collect()
    };
    let missing = |real: &serde_json::Value, ours: &serde_json::Value, ignore: &[&str]| {
        let ours = keys(ours);
        keys(real)
            .into_iter()
            .filter(|key| !ours.contains(key) && !ignore.contains(&key.as_str()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        missing(&real["comment"], &comments[0], &[]),
        Vec::<String>::new()
    );
    assert_eq!(
        missing(&real["comment"]["user"], &comments[0]["user"], &[]),
        Vec::<String>::new()
    );
    let issue_extras = [
        "labels_url",
        "events_url",
        "milestone",
        "active_lock_reason",
        "reactions",
        "timeline_url",
        "performed_via_github_app",
        "state_reason",
    ];
    assert_eq!(
        missing(&real["issue"], &issue, &issue_extras),
        Vec::<String>::new()
    );
}

/// A successful answer that says the quota is spent paces the next request until the reset,
/// instead of sending it to be refused.
#[tokio::test]
async fn a_spent_quota_on_a_success_waits_for_the_reset_before_the_next_request() {
    let mock = MockGitHub::start();
    mock.add_issue(4, "t", "b", "alice");
    let id = mock.add_comment(4, "alice", "User", "/agent fix");
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 2;
    mock.fail_next(
        Fault::status("POST", "/reactions", 201)
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", &reset.to_string()),
    );
    let client = client(&mock);
    client
        .react(&repo(), id, Reaction::Eyes)
        .await
        .expect("reacted");
    let started = std::time::Instant::now();
    client
        .issue(&repo(), 4)
        .await
        .expect("read after the reset");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited {:?}",
        started.elapsed()
    );
    let gets = api_requests(&mock, "GET");
    assert_eq!(gets.len(), 1, "sent once, after the wait");
}

/// The models the client decodes with read every real object of their kind: octocrab's pull
/// request model (used for every pull-request answer) each `pull_request` in the samples, and
/// our own issue and comment models each `issue` and `comment`.
#[test]
fn the_decoding_models_read_the_real_payloads() {
    let test = "the_decoding_models_read_the_real_payloads";
    let Some(examples) = crate::common::webhooks::WebhookExamples::load(test) else {
        return;
    };
    let (mut pulls, mut issues, mut comments) = (0, 0, 0);
    for (index, (event, value)) in examples.all().enumerate() {
        let name = format!("{event} example {index}");
        if let Some(pull) = value
            .get("pull_request")
            .filter(|p| p.get("head").is_some())
        {
            serde_json::from_value::<octocrab::models::pulls::PullRequest>(pull.clone())
                .unwrap_or_else(|error| panic!("{name}: pull_request: {error}"));
            pulls += 1;
        }
        if let Some(issue) = value.get("issue") {
            serde_json::from_value::<meta_agent::github::api::Issue>(issue.clone())
                .unwrap_or_else(|error| panic!("{name}: issue: {error}"));
            issues += 1;
        }
        if let Some(comment) = value
            .get("comment")
            .filter(|c| c.get("issue_url").is_some())
        {
            serde_json::from_value::<meta_agent::github::api::Comment>(comment.clone())
                .unwrap_or_else(|error| panic!("{name}: comment: {error}"));
            comments += 1;
        }
    }
    assert!(
        pulls >= 1 && issues >= 5 && comments >= 3,
        "{pulls} {issues} {comments}"
    );
}

#[tokio::test]
async fn content_creating_writes_go_out_at_least_a_second_apart_by_default() {
    let mock = MockGitHub::start();
    mock.add_issue(6, "t", "b", "alice");
    let client = client_with(&mock.url, TOKEN, RatePolicy::default());
    let started = Instant::now();
    let first = client
        .create_comment(&repo(), 6, "one")
        .await
        .expect("first");
    let after_first = started.elapsed();
    client
        .update_comment(&repo(), first.id, "two")
        .await
        .expect("second");
    client
        .create_comment(&repo(), 6, "three")
        .await
        .expect("third");
    // The first write goes at once; each later one waits out the second since the previous.
    assert!(after_first < Duration::from_millis(900), "{after_first:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "three writes in {:?}",
        started.elapsed()
    );
    assert_eq!(mock.comments(6).len(), 2);
}
