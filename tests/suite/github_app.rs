//! The GitHub App identity against the loopback mock GitHub: the JWT the bot signs (RS256, `iss`
//! the App id, `iat` backdated 60 s for clock skew, expiring within GitHub's 10 minutes), the
//! mock's own JWT checks shown able to refuse, the token exchange (installation found for the
//! repository, a token asked for that one repository and the run's permissions, the App's slug
//! for its bot login), refusals named plainly (not installed, permissions not granted), the
//! Enterprise Server prefix, and the private key kept out of children and outbound text.

use std::time::{SystemTime, UNIX_EPOCH};

use meta_agent::github::RepoId;
use meta_agent::github::app::{self, AppCredentials, AppError, TokenScope};
use meta_agent::github::rate::RatePolicy;
use meta_agent::github::rest::{RestClient, RestSettings};
use meta_agent::github::{GitHubApi, GitHubError};
use octocrab::jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Value, json};

use crate::common::fixtures;
use crate::common::mock_github::{MockApp, MockGitHub};

const APP_ID: u64 = 4242;
const MINTED: &str = "ghs_MintedInstallationToken0123456789ab";
const WORKFLOW_TOKEN: &str = "ghs_WorkflowTokenNotForTheApp0123456789";

fn key_pem() -> String {
    std::fs::read_to_string(fixtures().join("github-app/test-only-private-key.pem")).unwrap()
}

fn public_pem() -> String {
    std::fs::read_to_string(fixtures().join("github-app/test-only-public-key.pem")).unwrap()
}

fn credentials() -> AppCredentials {
    let key = key_pem();
    AppCredentials::from_lookup(|name| match name {
        "META_AGENT_APP_ID" => Some(APP_ID.to_string()),
        "META_AGENT_APP_PRIVATE_KEY" => Some(key.clone()),
        _ => None,
    })
    .expect("valid credentials")
    .expect("an App")
}

fn mock_app(repositories: &[&str], permissions: &[(&str, &str)]) -> MockApp {
    MockApp {
        id: APP_ID,
        slug: "meta-agent-ci".into(),
        public_key_pem: public_pem(),
        installation_id: 77,
        owner: "octo".into(),
        repositories: repositories.iter().map(|r| (*r).to_owned()).collect(),
        permissions: permissions
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        token: MINTED.into(),
    }
}

const GRANTED: &[(&str, &str)] = &[
    ("contents", "write"),
    ("issues", "write"),
    ("pull_requests", "write"),
    ("metadata", "read"),
    ("actions", "read"),
];

fn settings(api_url: &str, token: &str) -> RestSettings {
    RestSettings {
        api_url: api_url.to_owned(),
        token: token.to_owned(),
        user_agent: "meta-agent-tests".to_owned(),
        deadline: None,
        rate: RatePolicy {
            read_retries: 0,
            ..RatePolicy::default()
        },
    }
}

fn repo() -> RepoId {
    RepoId::parse("octo/widgets").unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn the_jwt_is_rs256_issued_by_the_app_backdated_and_short_lived() {
    let before = now();
    let jwt = credentials().jwt().expect("signed");
    let after = now();
    let header = octocrab::jsonwebtoken::decode_header(&jwt).expect("header");
    assert_eq!(header.alg, Algorithm::RS256);
    let key = DecodingKey::from_rsa_pem(public_pem().as_bytes()).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    let claims = octocrab::jsonwebtoken::decode::<Value>(&jwt, &key, &validation)
        .expect("the signature verifies with the App's public key")
        .claims;
    assert_eq!(claims["iss"], json!(APP_ID));
    let iat = claims["iat"].as_u64().expect("iat");
    let exp = claims["exp"].as_u64().expect("exp");
    assert!(
        (before - 60..=after - 60).contains(&iat),
        "iat {iat} is 60 s before signing ({before}..{after})"
    );
    assert!(exp > after, "not expired");
    assert!(
        exp - iat <= 600,
        "GitHub accepts at most 10 minutes: {}",
        exp - iat
    );
    assert!(exp - after <= 600);
}

#[tokio::test]
async fn the_mock_refuses_jwts_github_would_refuse() {
    let mock = MockGitHub::start();
    mock.install_app(mock_app(&[], GRANTED));
    let sign = |claims: Value| {
        let key = EncodingKey::from_rsa_pem(key_pem().as_bytes()).unwrap();
        octocrab::jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &key).unwrap()
    };
    let now = now();
    let cases = [
        (
            json!({"iss": APP_ID, "iat": now - 60, "exp": now + 1200}),
            "too far in the future",
        ),
        (
            json!({"iss": APP_ID, "iat": now + 300, "exp": now + 540}),
            "'Issued at' claim",
        ),
        (
            json!({"iss": APP_ID, "iat": now - 900, "exp": now - 60}),
            "'Expiration time' claim",
        ),
        (
            json!({"iss": 1, "iat": now - 60, "exp": now + 540}),
            "could not be decoded",
        ),
    ];
    for (claims, message) in cases {
        let api = RestClient::new(settings(&mock.url, &sign(claims.clone()))).unwrap();
        let error = api.authenticated_app().await.unwrap_err();
        assert!(
            matches!(error, GitHubError::Unauthorized { status: 401, .. })
                && error.to_string().contains(message),
            "{claims}: {error}"
        );
    }
    let workflow = RestClient::new(settings(&mock.url, WORKFLOW_TOKEN)).unwrap();
    assert!(
        workflow.authenticated_app().await.is_err(),
        "a token is not a JWT"
    );
    let good = sign(json!({"iss": APP_ID, "iat": now - 60, "exp": now + 540}));
    let api = RestClient::new(settings(&mock.url, &good)).unwrap();
    let app = api.authenticated_app().await.expect("a good JWT");
    assert_eq!(app.slug.as_deref(), Some("meta-agent-ci"));
}

#[tokio::test]
async fn an_installation_token_is_minted_for_this_repository_and_the_runs_permissions() {
    let mock = MockGitHub::start();
    mock.set_token(WORKFLOW_TOKEN);
    mock.install_app(mock_app(&[], GRANTED));
    mock.add_issue(5, "t", "b", "alice");
    let scope = TokenScope::for_run(&repo(), false);

    let minted = app::mint(&credentials(), settings(&mock.url, ""), &repo(), &scope)
        .await
        .expect("minted");
    assert_eq!(minted.token, MINTED);
    assert_eq!(minted.bot_login.as_deref(), Some("meta-agent-ci[bot]"));
    assert!(minted.expires_at.is_some());
    assert!(!format!("{minted:?}").contains(MINTED));

    let requests = mock.requests();
    let routes: Vec<(String, String)> = requests
        .iter()
        .map(|r| (r.method.clone(), r.path.clone()))
        .collect();
    assert_eq!(
        routes,
        [
            ("GET".into(), "/repos/octo/widgets/installation".into()),
            ("POST".into(), "/app/installations/77/access_tokens".into()),
            ("GET".into(), "/app".into()),
        ]
    );
    for request in &requests {
        let bearer = request.header("authorization").unwrap_or_default();
        assert_eq!(bearer, format!("Bearer {}", minted.jwt), "{}", request.path);
        assert_eq!(request.header("x-github-api-version"), Some("2022-11-28"));
    }
    assert_eq!(
        requests[1].json(),
        json!({
            "repositories": ["widgets"],
            "permissions": {"contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"},
        })
    );

    let as_app = RestClient::new(settings(&mock.url, &minted.token)).unwrap();
    as_app
        .issue(&repo(), 5)
        .await
        .expect("the minted token is accepted");
}

#[tokio::test]
async fn an_app_not_installed_on_the_repository_is_named() {
    let mock = MockGitHub::start();
    mock.install_app(mock_app(&["other"], GRANTED));
    let scope = TokenScope::for_run(&repo(), false);
    let error = app::mint(&credentials(), settings(&mock.url, ""), &repo(), &scope)
        .await
        .unwrap_err();
    assert!(matches!(error, AppError::NotInstalled { .. }), "{error:?}");
    assert!(error.is_configuration());
    assert_eq!(
        error.to_string(),
        "the GitHub App 4242 is not installed on octo/widgets: install it on the repository first"
    );
}

#[tokio::test]
async fn permissions_the_installation_lacks_are_refused_in_githubs_words() {
    let mock = MockGitHub::start();
    mock.install_app(mock_app(&[], &GRANTED[..4]));
    let scope = TokenScope::for_run(&repo(), true);
    let error = app::mint(&credentials(), settings(&mock.url, ""), &repo(), &scope)
        .await
        .unwrap_err();
    assert!(matches!(error, AppError::TokenRefused { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("actions: read"), "{text}");
    assert!(text.contains("not granted to this installation"), "{text}");
}

#[tokio::test]
async fn the_enterprise_server_prefix_reaches_the_app_endpoints() {
    let mock = MockGitHub::start();
    mock.install_app(mock_app(&[], GRANTED));
    let scope = TokenScope::for_run(&repo(), true);
    let api_url = format!("{}/api/v3", mock.url);
    app::mint(&credentials(), settings(&api_url, ""), &repo(), &scope)
        .await
        .expect("minted through /api/v3");
    assert!(
        mock.requests()
            .iter()
            .all(|r| r.path.starts_with("/api/v3/")),
        "{:?}",
        mock.requests().iter().map(|r| &r.path).collect::<Vec<_>>()
    );
}

#[test]
fn the_private_key_never_reaches_a_child_or_outbound_text() {
    let key = key_pem();
    let parent = vec![
        ("PATH".to_owned(), "/usr/bin".to_owned()),
        ("META_AGENT_APP_ID".to_owned(), APP_ID.to_string()),
        ("META_AGENT_APP_PRIVATE_KEY".to_owned(), key.clone()),
    ];
    // Even a configuration that allowlists every META_AGENT_* variable passes no key on.
    let child = meta_agent::exec::env::child_env(
        parent.clone(),
        &["META_AGENT_*".to_owned()],
        std::iter::empty(),
    );
    assert!(
        !child.contains_key("META_AGENT_APP_PRIVATE_KEY"),
        "{child:?}"
    );
    assert!(child.values().all(|value| !value.contains("PRIVATE KEY")));
    let redactor = meta_agent::redact::Redactor::from_env(parent);
    let text = format!("the key is {key}");
    let out = redactor.redact_text(&text);
    assert!(!out.contains(&key[40..120]), "{out}");
    assert!(out.contains("[REDACTED:"), "{out}");
}

#[test]
fn the_minted_token_and_jwt_feed_the_redactor() {
    let minted = app::Minted {
        token: MINTED.into(),
        expires_at: None,
        bot_login: None,
        jwt: "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjQyNDJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ".into(),
    };
    let redactor = meta_agent::redact::Redactor::from_env(minted.as_secret_env());
    let text = format!("token {MINTED} jwt {}", minted.jwt);
    let out = redactor.redact_text(&text);
    assert!(!out.contains(MINTED) && !out.contains(&minted.jwt), "{out}");
}
