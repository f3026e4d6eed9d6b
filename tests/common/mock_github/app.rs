//! The GitHub App side of the mock: `GET /app`, `GET /repos/{owner}/{repo}/installation` and
//! `POST /app/installations/{id}/access_tokens`, authenticated by a JWT verified as GitHub does
//! (RS256 signature with the App's public key; `iss` the App id; `exp` in the future and at
//! most ten minutes ahead; `iat` not in the future), answering the real shapes
//! (docs.github.com/rest/apps) and GitHub's error messages. Each exchange mints the App's token
//! for an hour, unless [`super::MockGitHub::mint_next`] queued another with its own lifetime.

use octocrab::jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
use serde_json::{Value, json};

use super::{Answer, Ctx, MockApp, Recorded, State, rfc3339, stable_id, user_json};

const APP_DOCS: &str = "https://docs.github.com/rest/apps/apps";

/// `Some(answer)` for the App endpoints, `None` for every other path.
pub(super) fn route(
    state: &mut State,
    ctx: &Ctx<'_>,
    request: &Recorded,
    segments: &[&str],
) -> Option<Answer> {
    let endpoint = match (request.method.as_str(), segments) {
        ("GET", ["app"]) => Endpoint::App,
        ("GET", ["repos", owner, repo, "installation"]) => {
            Endpoint::Installation(owner.to_string(), repo.to_string())
        }
        ("POST", ["app", "installations", id, "access_tokens"]) => {
            Endpoint::AccessToken(id.to_string())
        }
        _ => return None,
    };
    let Some(app) = state.app.clone() else {
        return Some(Answer::error(401, "A JSON web token could not be decoded"));
    };
    if let Err(refusal) = verify_jwt(&app, request) {
        return Some(refusal);
    }
    Some(match endpoint {
        Endpoint::App => Answer::json(200, app_json(&app, ctx)),
        Endpoint::Installation(owner, repo) => installation(&app, ctx, &owner, &repo),
        Endpoint::AccessToken(id) => access_token(state, &app, ctx, &id, request),
    })
}

enum Endpoint {
    App,
    Installation(String, String),
    AccessToken(String),
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

/// GitHub's checks of an App JWT, with its wording.
fn verify_jwt(app: &MockApp, request: &Recorded) -> Result<(), Answer> {
    let undecodable = || Answer::error(401, "A JSON web token could not be decoded");
    let token = request
        .header("authorization")
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(undecodable)?;
    let key =
        DecodingKey::from_rsa_pem(app.public_key_pem.as_bytes()).map_err(|_| undecodable())?;
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    validation.required_spec_claims.clear();
    let claims = decode::<Value>(token, &key, &validation)
        .map_err(|_| undecodable())?
        .claims;
    let number = |name: &str| claims.get(name).and_then(Value::as_u64);
    let issuer = claims.get("iss").and_then(|iss| {
        iss.as_u64()
            .or_else(|| iss.as_str().and_then(|text| text.parse().ok()))
    });
    let now = now();
    match (number("iat"), number("exp"), issuer) {
        (None, _, _) => Err(Answer::error(
            401,
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
        )),
        (_, None, _) => Err(Answer::error(
            401,
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
        )),
        (Some(iat), _, _) if iat > now => Err(Answer::error(
            401,
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
        )),
        (_, Some(exp), _) if exp <= now => Err(Answer::error(
            401,
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
        )),
        (_, Some(exp), _) if exp > now + 600 => Err(Answer::error(
            401,
            "'Expiration time' claim ('exp') is too far in the future",
        )),
        (_, _, issuer) if issuer != Some(app.id) => {
            Err(Answer::error(401, "A JSON web token could not be decoded"))
        }
        _ => Ok(()),
    }
}

fn installed_on(app: &MockApp, owner: &str, repo: &str) -> bool {
    owner == app.owner
        && (app.repositories.is_empty() || app.repositories.iter().any(|r| r == repo))
}

fn permissions_json(permissions: &[(String, String)]) -> Value {
    permissions
        .iter()
        .map(|(name, access)| (name.clone(), json!(access)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn app_json(app: &MockApp, ctx: &Ctx<'_>) -> Value {
    json!({
        "id": app.id,
        "slug": app.slug,
        "client_id": "Iv23liMock",
        "node_id": "A_kwHOMock",
        "owner": user_json(&ctx.api, &app.owner, "User"),
        "name": format!("{} app", app.slug),
        "description": "",
        "external_url": "https://example.com/meta-agent",
        "html_url": format!("https://github.com/apps/{}", app.slug),
        "created_at": rfc3339(1_795_320_000),
        "updated_at": rfc3339(1_795_320_000),
        "permissions": permissions_json(&app.permissions),
        "events": ["issues", "issue_comment", "workflow_run"],
        "installations_count": 1,
    })
}

fn installation_json(app: &MockApp, ctx: &Ctx<'_>) -> Value {
    let id = app.installation_id;
    json!({
        "id": id,
        "client_id": "Iv23liMock",
        "account": user_json(&ctx.api, &app.owner, "User"),
        "repository_selection": if app.repositories.is_empty() { "all" } else { "selected" },
        "access_tokens_url": format!("{}/app/installations/{id}/access_tokens", ctx.api),
        "repositories_url": format!("{}/installation/repositories", ctx.api),
        "html_url": format!("https://github.com/settings/installations/{id}"),
        "app_id": app.id,
        "app_slug": app.slug,
        "target_id": stable_id(&app.owner),
        "target_type": "User",
        "permissions": permissions_json(&app.permissions),
        "events": ["issues", "issue_comment", "workflow_run"],
        "created_at": rfc3339(1_795_320_000),
        "updated_at": rfc3339(1_795_320_000),
        "single_file_name": null,
        "has_multiple_single_files": false,
        "single_file_paths": [],
        "suspended_by": null,
        "suspended_at": null,
    })
}

fn installation(app: &MockApp, ctx: &Ctx<'_>, owner: &str, repo: &str) -> Answer {
    if !installed_on(app, owner, repo) {
        return Answer::json(
            404,
            json!({"message": "Not Found", "documentation_url": format!("{APP_DOCS}#get-a-repository-installation-for-the-authenticated-app"), "status": "404"}),
        );
    }
    Answer::json(200, installation_json(app, ctx))
}

fn level(access: &str) -> u8 {
    match access {
        "read" => 1,
        "write" => 2,
        "admin" => 3,
        _ => 0,
    }
}

/// Whether every requested permission is within the installation's grant.
fn granted(app: &MockApp, requested: &serde_json::Map<String, Value>) -> bool {
    requested.iter().all(|(name, access)| {
        let wanted = access.as_str().map(level).unwrap_or(u8::MAX);
        app.permissions
            .iter()
            .any(|(granted, have)| granted == name && level(have) >= wanted)
    })
}

fn unprocessable(message: &str) -> Answer {
    Answer::json(
        422,
        json!({"message": message, "documentation_url": format!("{APP_DOCS}#create-an-installation-access-token-for-an-app"), "status": "422"}),
    )
}

fn access_token(
    state: &mut State,
    app: &MockApp,
    ctx: &Ctx<'_>,
    id: &str,
    request: &Recorded,
) -> Answer {
    if id.parse::<u64>().ok() != Some(app.installation_id) {
        return Answer::error(404, "Not Found");
    }
    let body: Value = serde_json::from_str(&request.body).unwrap_or(Value::Null);
    let repositories: Vec<String> = body
        .get("repositories")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if !repositories
        .iter()
        .all(|repo| installed_on(app, &app.owner, repo))
    {
        return unprocessable(
            "There is at least one repository that does not exist or is not accessible to the parent installation.",
        );
    }
    let requested = body
        .get("permissions")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if !granted(app, &requested) {
        return unprocessable("The permissions requested are not granted to this installation.");
    }
    let (token, lifetime) = state
        .minted_next
        .pop_front()
        .unwrap_or_else(|| (app.token.clone(), 3600));
    state.tokens.push(token.clone());
    let permissions = if requested.is_empty() {
        permissions_json(&app.permissions)
    } else {
        Value::Object(requested)
    };
    let repos: Vec<Value> = repositories
        .iter()
        .map(|name| ctx.repo(&app.owner, name).json())
        .collect();
    let mut answer = json!({
        "token": token,
        "expires_at": rfc3339(now() + lifetime),
        "permissions": permissions,
        "repository_selection": if repositories.is_empty() { "all" } else { "selected" },
    });
    if !repos.is_empty() {
        answer["repositories"] = Value::Array(repos);
    }
    Answer::json(201, answer)
}
