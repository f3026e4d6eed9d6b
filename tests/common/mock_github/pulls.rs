//! The pull-request side of the mock beyond listing and creating: one pull request
//! (`GET /repos/{owner}/{repo}/pulls/{n}`), its files with their hunks (`.../files`, computed
//! with `git diff` in the repository the mock serves, as GitHub computes them against the merge
//! base), its reviews (`GET`/`POST .../reviews`, a review comment refused with GitHub's
//! "Line could not be resolved" unless its lines lie in one of the file's hunks on the head's
//! side), the repository itself (`GET /repos/{owner}/{repo}`) and a file's contents on a branch
//! (`GET /repos/{owner}/{repo}/contents/{path}?ref=`, base64 in lines of 60 as GitHub sends it),
//! and a branch (`GET /repos/{owner}/{repo}/branches/{branch}`: its tip in the served repository
//! and whether it is protected). Shapes follow docs.github.com/rest/pulls, /rest/repos/contents
//! and /rest/branches/branches.

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use serde_json::{Value, json};

use super::{
    Answer, BASE_TIME, Ctx, MockPull, Recorded, Repo, State, number_of, paginate, pull_json,
    rfc3339, stable_id, user_json, with_link,
};

/// A review as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockReview {
    pub id: u64,
    pub pull: u64,
    pub author: String,
    pub body: String,
    pub commit_id: String,
    pub event: String,
    pub comments: Vec<MockReviewComment>,
}

/// A comment of a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockReviewComment {
    pub path: String,
    pub body: String,
    pub start_line: Option<u64>,
    pub line: u64,
}

/// `Some(answer)` for the endpoints here, `None` for every other path.
pub(super) fn route(
    state: &mut State,
    ctx: &Ctx<'_>,
    request: &Recorded,
    segments: &[&str],
) -> Option<Answer> {
    Some(match (request.method.as_str(), segments) {
        ("GET", ["repos", owner, repo]) => Answer::json(200, ctx.repo(owner, repo).json()),
        ("GET", ["repos", owner, repo, "contents", path @ ..]) => {
            contents(state, &ctx.repo(owner, repo), &path.join("/"))
        }
        ("GET", ["repos", owner, repo, "branches", branch @ ..]) if !branch.is_empty() => {
            branch_json(state, &ctx.repo(owner, repo), &branch.join("/"))
        }
        ("GET", ["repos", owner, repo, "pulls", number]) => {
            let repo = ctx.repo(owner, repo);
            match find(state, number) {
                Some(pull) => Answer::json(200, pull_json(state, &repo, pull)),
                None => Answer::error(404, "Not Found"),
            }
        }
        ("GET", ["repos", _, _, "pulls", number, "files"]) => files(state, ctx, number),
        ("GET", ["repos", owner, repo, "pulls", number, "reviews"]) => {
            list_reviews(state, &ctx.repo(owner, repo), number)
        }
        ("POST", ["repos", owner, repo, "pulls", number, "reviews"]) => {
            create_review(state, &ctx.repo(owner, repo), number, request)
        }
        _ => return None,
    })
}

fn find<'s>(state: &'s State, number: &str) -> Option<&'s MockPull> {
    let number = number_of(number)?;
    state.pulls.iter().find(|pull| pull.number == number)
}

/// Runs git in the served repository; `None` when it fails (an unknown revision).
pub(super) fn git(served: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(served)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The commit a pull request proposes: the one it was given, else its branch in the served
/// repository, else a stable made-up id.
pub(super) fn head_sha(state: &State, pull: &MockPull) -> String {
    if let Some(sha) = &pull.head_sha {
        return sha.clone();
    }
    state
        .served
        .as_deref()
        .and_then(|served| git(served, &["rev-parse", &format!("refs/heads/{}", pull.head)]))
        .map(|sha| sha.trim().to_owned())
        .unwrap_or_else(|| format!("{:040x}", stable_id(&pull.head)))
}

fn branch_json(state: &State, repo: &Repo<'_>, branch: &str) -> Answer {
    let tip = state
        .served
        .as_deref()
        .and_then(|served| git(served, &["rev-parse", &format!("refs/heads/{branch}")]));
    let Some(tip) = tip else {
        return Answer::error(404, "Branch not found");
    };
    let sha = tip.trim();
    Answer::json(
        200,
        json!({
            "name": branch,
            "commit": {"sha": sha, "url": format!("{}/commits/{sha}", repo.api())},
            "protected": state.protected.iter().any(|name| name == branch),
            "protection_url": format!("{}/branches/{branch}/protection", repo.api()),
            "_links": {"self": format!("{}/branches/{branch}", repo.api()),
                       "html": format!("{}/tree/{branch}", repo.html())},
        }),
    )
}

fn contents(state: &State, repo: &Repo<'_>, path: &str) -> Answer {
    let git_ref = repo.ctx.target.param("ref").unwrap_or("main").to_owned();
    let text = state
        .served
        .as_deref()
        .and_then(|served| git(served, &["show", &format!("{git_ref}:{path}")]));
    let Some(text) = text else {
        return Answer::error(404, "Not Found");
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    let lines: Vec<&str> = encoded
        .as_bytes()
        .chunks(60)
        .map(|chunk| std::str::from_utf8(chunk).unwrap_or_default())
        .collect();
    let name = path.rsplit('/').next().unwrap_or(path);
    Answer::json(
        200,
        json!({
            "type": "file", "encoding": "base64", "size": text.len(), "name": name,
            "path": path, "sha": format!("{:040x}", stable_id(&text)),
            "url": format!("{}/contents/{path}?ref={git_ref}", repo.api()),
            "html_url": format!("{}/blob/{git_ref}/{path}", repo.html()),
            "content": format!("{}\n", lines.join("\n")),
        }),
    )
}

/// One file's entry of `.../files`.
struct FileEntry {
    filename: String,
    status: &'static str,
    patch: String,
}

/// The pull request's files: `git diff` from the merge base of its base branch and its head.
fn pull_files(state: &State, pull: &MockPull) -> Vec<FileEntry> {
    let Some(served) = state.served.as_deref() else {
        return Vec::new();
    };
    let head = head_sha(state, pull);
    let range = format!("refs/heads/{}...{head}", pull.base);
    let diff = git(served, &["diff", "--no-color", "--no-renames", &range]).unwrap_or_default();
    let mut files = Vec::new();
    for section in diff.split("diff --git ").skip(1) {
        let header = section.lines().next().unwrap_or_default();
        let filename = header
            .rsplit_once(" b/")
            .map(|(_, path)| path.to_owned())
            .unwrap_or_default();
        let status = if section.contains("\nnew file mode") {
            "added"
        } else if section.contains("\ndeleted file mode") {
            "removed"
        } else {
            "modified"
        };
        let patch = section
            .find("\n@@ ")
            .map(|at| section[at + 1..].trim_end_matches('\n').to_owned())
            .unwrap_or_default();
        files.push(FileEntry {
            filename,
            status,
            patch,
        });
    }
    files
}

fn files(state: &State, ctx: &Ctx<'_>, number: &str) -> Answer {
    let Some(pull) = find(state, number) else {
        return Answer::error(404, "Not Found");
    };
    let entries: Vec<Value> = pull_files(state, pull)
        .into_iter()
        .map(|file| {
            json!({
                "sha": format!("{:040x}", stable_id(&file.filename)),
                "filename": file.filename, "status": file.status,
                "additions": file.patch.lines().filter(|l| l.starts_with('+')).count(),
                "deletions": file.patch.lines().filter(|l| l.starts_with('-')).count(),
                "changes": file.patch.lines().filter(|l| l.starts_with(['+', '-'])).count(),
                "blob_url": "", "raw_url": "", "contents_url": "",
                "patch": file.patch,
            })
        })
        .collect();
    let (page, link) = paginate(&entries, ctx);
    with_link(Answer::json(200, Value::Array(page)), link)
}

fn review_json(state: &State, repo: &Repo<'_>, review: &MockReview) -> Value {
    json!({
        "id": review.id, "node_id": "PRR_kwDOMock",
        "user": user_json(&repo.ctx.api, &review.author, state.account_type(&review.author)),
        "body": review.body, "state": "COMMENTED", "commit_id": review.commit_id,
        "html_url": format!("{}/pull/{}#pullrequestreview-{}", repo.html(), review.pull, review.id),
        "pull_request_url": format!("{}/pulls/{}", repo.api(), review.pull),
        "submitted_at": rfc3339(BASE_TIME), "author_association": "NONE",
        "_links": {"html": {"href": ""}, "pull_request": {"href": ""}},
    })
}

fn list_reviews(state: &State, repo: &Repo<'_>, number: &str) -> Answer {
    let Some(pull) = find(state, number) else {
        return Answer::error(404, "Not Found");
    };
    let reviews: Vec<Value> = state
        .reviews
        .iter()
        .filter(|review| review.pull == pull.number)
        .map(|review| review_json(state, repo, review))
        .collect();
    let (page, link) = paginate(&reviews, repo.ctx);
    with_link(Answer::json(200, Value::Array(page)), link)
}

/// GitHub's 422 for a review comment on lines outside the diff.
fn unresolved() -> Answer {
    Answer::json(
        422,
        json!({"message": "Unprocessable Entity", "errors": ["Line could not be resolved"],
               "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
               "status": "422"}),
    )
}

/// The inclusive head-side line ranges of a file's hunks.
fn hunk_ranges(patch: &str) -> Vec<(u64, u64)> {
    patch
        .lines()
        .filter_map(|line| line.strip_prefix("@@ "))
        .filter_map(|header| {
            let new = header.split_whitespace().nth(1)?.strip_prefix('+')?;
            let (start, count) = new.split_once(',').unwrap_or((new, "1"));
            let (start, count): (u64, u64) = (start.parse().ok()?, count.parse().ok()?);
            (count > 0).then(|| (start, start + count - 1))
        })
        .collect()
}

fn create_review(state: &mut State, repo: &Repo<'_>, number: &str, request: &Recorded) -> Answer {
    let Some(pull) = find(state, number).cloned() else {
        return Answer::error(404, "Not Found");
    };
    let Ok(body) = serde_json::from_str::<Value>(&request.body) else {
        return Answer::error(400, "Problems parsing JSON");
    };
    let files = pull_files(state, &pull);
    let mut comments = Vec::new();
    for comment in body["comments"].as_array().cloned().unwrap_or_default() {
        let path = comment["path"].as_str().unwrap_or_default().to_owned();
        let line = comment["line"].as_u64().unwrap_or(0);
        let start_line = comment["start_line"].as_u64();
        let ranges = files
            .iter()
            .find(|file| file.filename == path)
            .map(|file| hunk_ranges(&file.patch))
            .unwrap_or_default();
        let first = start_line.unwrap_or(line);
        let inside = ranges.iter().any(|&(a, b)| a <= first && line <= b);
        if comment["side"].as_str() != Some("RIGHT") || first > line || !inside {
            return unresolved();
        }
        comments.push(MockReviewComment {
            path,
            body: comment["body"].as_str().unwrap_or_default().to_owned(),
            start_line,
            line,
        });
    }
    let (id, _) = state.stamp();
    let review = MockReview {
        id,
        pull: pull.number,
        author: state.bot_login.clone(),
        body: body["body"].as_str().unwrap_or_default().to_owned(),
        commit_id: body["commit_id"]
            .as_str()
            .map_or_else(|| head_sha(state, &pull), str::to_owned),
        event: body["event"].as_str().unwrap_or("PENDING").to_owned(),
        comments,
    };
    state.reviews.push(review.clone());
    Answer::json(200, review_json(state, repo, &review))
}
