//! The triggering event: the payload at `GITHUB_EVENT_PATH` read into typed values (only the
//! fields the bot uses), then classified into what to do ([`Trigger`]) or why to do nothing.
//! Pure: the caller reads the file; nothing here calls GitHub.
//!
//! Every text taken from a payload (titles, bodies, comments) is untrusted: it is carried as
//! data, sanitized and fenced where it enters a prompt, never interpreted here beyond the strict
//! slash-command parser.

use meta_agent_protocol::ignored::{CommentEvent, Ignored};
use meta_agent_render::step::{Doing, TriggerLine};
use serde::Deserialize;

use super::api::Account;
use super::command::{self, Command, Parsed};

/// What the step should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// An issue opened with the label, or labelled with it: build from the issue.
    Issue { issue: IssueRef, actor: Account },
    /// A slash command in an issue or pull-request conversation (see [`Trigger::pull_request`]).
    Comment {
        issue: IssueRef,
        comment_id: u64,
        /// When the comment was written (RFC 3339): the thread is read up to here.
        created_at: String,
        actor: Account,
        command: Command,
    },
    /// A review comment with a slash command on a pull request (whose facts are read from the
    /// API, never from the payload's copy of its branch names).
    ReviewComment {
        pull: u64,
        comment_id: u64,
        created_at: String,
        /// `path:line` the comment is attached to.
        location: String,
        actor: Account,
        command: Command,
    },
    /// A workflow run that completed with a failure: heal it.
    FailedRun {
        run_id: u64,
        workflow: String,
        head_branch: String,
        head_sha: String,
        actor: Account,
        /// Whose code failed: the default branch's, or a pull request's head (found through
        /// the API by `head_branch`, checked against `head_sha`).
        of: RunOf,
    },
    /// A manual dispatch with inputs.
    Dispatch {
        issue: Option<u64>,
        guidance: Option<String>,
        actor: Account,
    },
}

impl Trigger {
    /// Who caused the event (the account authorized before anything else).
    pub fn actor(&self) -> &Account {
        match self {
            Self::Issue { actor, .. }
            | Self::Comment { actor, .. }
            | Self::ReviewComment { actor, .. }
            | Self::FailedRun { actor, .. }
            | Self::Dispatch { actor, .. } => actor,
        }
    }

    /// The issue or pull request whose conversation holds the status comment, if any.
    pub fn thread(&self) -> Option<u64> {
        match self {
            Self::Issue { issue, .. } | Self::Comment { issue, .. } => Some(issue.number),
            Self::ReviewComment { pull, .. } => Some(*pull),
            Self::FailedRun { .. } => None,
            Self::Dispatch { issue, .. } => *issue,
        }
    }

    /// The pull request the trigger is about: a comment in a pull request's conversation (the
    /// payload's `issue` carries `pull_request`, which GitHub sets and no text can), or a review
    /// comment. `None` for everything about an issue or the default branch.
    pub fn pull_request(&self) -> Option<u64> {
        match self {
            Self::Comment { issue, .. } => issue.pull_request.is_some().then_some(issue.number),
            Self::ReviewComment { pull, .. } => Some(*pull),
            Self::Issue { .. } | Self::FailedRun { .. } | Self::Dispatch { .. } => None,
        }
    }

    /// The comment to acknowledge with a reaction, if the trigger is one.
    pub fn comment_id(&self) -> Option<u64> {
        match self {
            Self::Comment { comment_id, .. } => Some(*comment_id),
            _ => None,
        }
    }

    /// A short name for logs and the job summary (render writes it).
    pub fn describe(&self) -> String {
        self.describe_doing(Doing::Run)
    }

    /// The short name with what the step does for it (publishing, pushing a held commit).
    pub fn describe_doing(&self, doing: Doing) -> String {
        meta_agent_render::step::trigger(self.line(), doing)
    }

    /// The trigger as render names it.
    fn line(&self) -> TriggerLine<'_> {
        match self {
            Self::Issue { issue, .. } => TriggerLine::Issue {
                number: issue.number,
            },
            Self::Comment { issue, command, .. } => TriggerLine::Comment {
                verb: command.verb(),
                number: issue.number,
            },
            Self::ReviewComment { pull, command, .. } => TriggerLine::ReviewComment {
                verb: command.verb(),
                pull: *pull,
            },
            Self::FailedRun {
                workflow, run_id, ..
            } => TriggerLine::FailedRun {
                run_id: *run_id,
                workflow,
            },
            Self::Dispatch { issue, .. } => TriggerLine::Dispatch { issue: *issue },
        }
    }
}

/// Whose code a failed run ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOf {
    /// The default branch's.
    DefaultBranch,
    /// A branch of this repository that should be an open pull request's head: a run started by
    /// a `pull_request` event, or (with [`PullRequestChecks::All`]) a `push` run on a branch
    /// other than the default one.
    PullRequestHead,
}

/// Which failed runs of pull requests are healed (the Action's `pull-request-checks`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PullRequestChecks {
    /// None: a pull request's checks are its author's to fix.
    #[default]
    Off,
    /// Runs started by `pull_request` events of same-repository pull requests.
    PullRequest,
    /// Those, and `push` runs on a branch that is an open same-repository pull request's head.
    All,
}

/// The issue as the payload shows it.
pub type IssueRef = super::api::Issue;

/// What the classifier needs from the configuration.
#[derive(Debug, Clone)]
pub struct TriggerSettings {
    /// `/agent` by default.
    pub phrase: String,
    /// The label that asks the bot to take an issue.
    pub label: String,
    /// The prefix of the bot's branches (`meta-agent/`).
    pub branch_prefix: String,
    /// Which failed runs of pull requests are healed.
    pub pull_request_checks: PullRequestChecks,
}

/// The classification: run, or the reason for doing nothing. Made once per step, so the size
/// difference between its variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classified {
    Run(Trigger),
    Ignore(Ignored),
}

/// A payload that is not what GitHub documents for its event.
#[derive(Debug, thiserror::Error)]
#[error("the {event} payload is not what GitHub documents: {message}")]
pub struct PayloadError {
    pub event: String,
    pub message: String,
}

#[derive(Deserialize)]
struct IssuesEvent {
    action: String,
    issue: IssueRef,
    #[serde(default)]
    label: Option<super::api::Label>,
    sender: Account,
}

#[derive(Deserialize)]
struct CommentBody {
    id: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    body: String,
    user: Account,
    created_at: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    line: Option<u64>,
}

#[derive(Deserialize)]
struct IssueCommentEvent {
    action: String,
    issue: IssueRef,
    comment: CommentBody,
}

#[derive(Deserialize)]
struct PullRef {
    number: u64,
}

#[derive(Deserialize)]
struct ReviewCommentEvent {
    action: String,
    comment: CommentBody,
    pull_request: PullRef,
}

#[derive(Deserialize)]
struct WorkflowRun {
    id: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    name: String,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    head_branch: String,
    head_sha: String,
    #[serde(default)]
    triggering_actor: Option<Account>,
    /// Absent from payloads GitHub sent before late 2021 (its published examples hold one):
    /// the event's `sender` stands in.
    #[serde(default)]
    actor: Option<Account>,
    /// The event that started the run (`push`, `pull_request`, `schedule`, ...).
    #[serde(default, deserialize_with = "null_as_empty")]
    event: String,
    /// The repository the run's head commit lives in (a fork's for a fork's pull request).
    #[serde(default)]
    head_repository: Option<RepositoryRef>,
}

#[derive(Deserialize)]
struct WorkflowRunEvent {
    action: String,
    workflow_run: WorkflowRun,
    #[serde(default)]
    repository: Option<RepositoryRef>,
    #[serde(default)]
    sender: Option<Account>,
}

#[derive(Deserialize)]
struct RepositoryRef {
    #[serde(default)]
    default_branch: Option<String>,
    #[serde(default)]
    full_name: Option<String>,
}

#[derive(Deserialize)]
struct DispatchEvent {
    #[serde(default)]
    inputs: Option<serde_json::Map<String, serde_json::Value>>,
    sender: Account,
}

/// Reads `payload` (the bytes at `GITHUB_EVENT_PATH`) for `event` and decides.
pub fn classify(
    event: &str,
    payload: &[u8],
    settings: &TriggerSettings,
) -> Result<Classified, PayloadError> {
    let decode_error = |err: serde_json::Error| PayloadError {
        event: event.to_owned(),
        message: err.to_string(),
    };
    match event {
        "issues" => Ok(issues(
            serde_json::from_slice(payload).map_err(decode_error)?,
            settings,
        )),
        "issue_comment" => Ok(issue_comment(
            serde_json::from_slice(payload).map_err(decode_error)?,
            settings,
        )),
        "pull_request_review_comment" => Ok(review_comment(
            serde_json::from_slice(payload).map_err(decode_error)?,
            settings,
        )),
        "workflow_run" => Ok(workflow_run(
            serde_json::from_slice(payload).map_err(decode_error)?,
            settings,
        )),
        "workflow_dispatch" => dispatch(serde_json::from_slice(payload).map_err(decode_error)?),
        other => Ok(Classified::Ignore(Ignored::OtherEvent {
            event: other.to_owned(),
        })),
    }
}

fn issues(event: IssuesEvent, settings: &TriggerSettings) -> Classified {
    let has_label = |name: &str| name == settings.label;
    let wanted = match event.action.as_str() {
        "opened" => event
            .issue
            .labels
            .iter()
            .any(|label| has_label(&label.name)),
        "labeled" => event
            .label
            .as_ref()
            .is_some_and(|label| has_label(&label.name)),
        _ => false,
    };
    if !wanted {
        return Classified::Ignore(Ignored::NoLabel {
            action: event.action,
            label: settings.label.clone(),
        });
    }
    Classified::Run(Trigger::Issue {
        issue: event.issue,
        actor: event.sender,
    })
}

fn issue_comment(event: IssueCommentEvent, settings: &TriggerSettings) -> Classified {
    if event.action != "created" {
        return Classified::Ignore(Ignored::CommentNotNew {
            on: CommentEvent::Issue,
            action: event.action,
        });
    }
    match command::parse(&event.comment.body, &settings.phrase) {
        Parsed::Command(command) => Classified::Run(Trigger::Comment {
            issue: event.issue,
            comment_id: event.comment.id,
            created_at: event.comment.created_at,
            actor: event.comment.user,
            command,
        }),
        Parsed::Unknown { word } => Classified::Ignore(Ignored::UnknownCommand { word }),
        Parsed::Ignored => Classified::Ignore(Ignored::NotACommand),
    }
}

fn review_comment(event: ReviewCommentEvent, settings: &TriggerSettings) -> Classified {
    if event.action != "created" {
        return Classified::Ignore(Ignored::CommentNotNew {
            on: CommentEvent::Review,
            action: event.action,
        });
    }
    let Parsed::Command(command) = command::parse(&event.comment.body, &settings.phrase) else {
        return Classified::Ignore(Ignored::ReviewNotACommand);
    };
    let location = match (&event.comment.path, event.comment.line) {
        (Some(path), Some(line)) => format!("{path}:{line}"),
        (Some(path), None) => path.clone(),
        _ => String::new(),
    };
    Classified::Run(Trigger::ReviewComment {
        pull: event.pull_request.number,
        comment_id: event.comment.id,
        created_at: event.comment.created_at,
        location,
        actor: event.comment.user,
        command,
    })
}

fn workflow_run(event: WorkflowRunEvent, settings: &TriggerSettings) -> Classified {
    let run = &event.workflow_run;
    if event.action != "completed" || run.conclusion.as_deref() != Some("failure") {
        return Classified::Ignore(Ignored::RunNotFailed {
            action: event.action.clone(),
            conclusion: run.conclusion.clone(),
        });
    }
    if run.head_branch.starts_with(&settings.branch_prefix) {
        return Classified::Ignore(Ignored::BotsOwnBranch {
            branch: run.head_branch.clone(),
        });
    }
    if let Some(reason) = fork_run(&event) {
        return Classified::Ignore(reason);
    }
    let of = match run_of(&event, settings) {
        Heal::Run(of) => of,
        Heal::Ignore(reason) => return Classified::Ignore(reason),
    };
    let run = event.workflow_run;
    let Some(actor) = run.triggering_actor.or(run.actor).or(event.sender) else {
        return Classified::Ignore(Ignored::NoActor);
    };
    Classified::Run(Trigger::FailedRun {
        run_id: run.id,
        workflow: run.name,
        head_branch: run.head_branch,
        head_sha: run.head_sha,
        actor,
        of,
    })
}

/// Why a run whose code comes from another repository (a fork's) is ignored, if it does.
fn fork_run(event: &WorkflowRunEvent) -> Option<Ignored> {
    let home = event
        .repository
        .as_ref()
        .and_then(|repository| repository.full_name.as_deref());
    let head = event
        .workflow_run
        .head_repository
        .as_ref()
        .and_then(|repository| repository.full_name.as_deref());
    match (home, head) {
        (Some(home), Some(head)) if !home.eq_ignore_ascii_case(head) => Some(Ignored::ForkRun {
            head: head.to_owned(),
            home: home.to_owned(),
        }),
        _ => None,
    }
}

/// Whether a failed run is healed, and as whose code.
enum Heal {
    Run(RunOf),
    /// Not healed, and why.
    Ignore(Ignored),
}

/// Whose code the failed run ran, or why it is not healed: `pull_request` runs and other
/// branches' `push` runs only as `pull-request-checks` allows, never `pull_request_target` runs.
fn run_of(event: &WorkflowRunEvent, settings: &TriggerSettings) -> Heal {
    let run = &event.workflow_run;
    let checks = settings.pull_request_checks;
    match run.event.as_str() {
        "pull_request_target" => {
            return Heal::Ignore(Ignored::PullRequestTarget);
        }
        "pull_request" if checks == PullRequestChecks::Off => {
            return Heal::Ignore(Ignored::PullRequestChecksOff);
        }
        "pull_request" => return Heal::Run(RunOf::PullRequestHead),
        _ => {}
    }
    let default = event
        .repository
        .as_ref()
        .and_then(|repository| repository.default_branch.as_deref());
    match default {
        Some(default) if default != run.head_branch => {
            if checks == PullRequestChecks::All && run.event == "push" {
                return Heal::Run(RunOf::PullRequestHead);
            }
            Heal::Ignore(Ignored::OtherBranch {
                branch: run.head_branch.clone(),
                default: default.to_owned(),
            })
        }
        _ => Heal::Run(RunOf::DefaultBranch),
    }
}

fn dispatch(event: DispatchEvent) -> Result<Classified, PayloadError> {
    let inputs = event.inputs.unwrap_or_default();
    let text = |name: &str| {
        inputs
            .get(name)
            .and_then(|value| value.as_str())
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let issue = match text("issue") {
        Some(value) => {
            Some(
                value
                    .trim_start_matches('#')
                    .parse::<u64>()
                    .map_err(|_| PayloadError {
                        event: "workflow_dispatch".to_owned(),
                        message: format!("input `issue` is {value:?}, not an issue number"),
                    })?,
            )
        }
        None => None,
    };
    Ok(Classified::Run(Trigger::Dispatch {
        issue,
        guidance: text("guidance"),
        actor: event.sender,
    }))
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings() -> TriggerSettings {
        TriggerSettings {
            phrase: "/agent".into(),
            label: "meta-agent".into(),
            branch_prefix: "meta-agent/".into(),
            pull_request_checks: PullRequestChecks::Off,
        }
    }

    fn run_with(event: &str, payload: serde_json::Value, checks: PullRequestChecks) -> Classified {
        let settings = TriggerSettings {
            pull_request_checks: checks,
            ..settings()
        };
        classify(event, payload.to_string().as_bytes(), &settings).unwrap()
    }

    fn user(login: &str) -> serde_json::Value {
        json!({"login": login, "id": 1, "type": "User"})
    }

    fn issue(labels: &[&str]) -> serde_json::Value {
        json!({"number": 7, "title": "Mean of empty list", "body": null, "user": user("alice"),
               "labels": labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>()})
    }

    fn run(event: &str, payload: serde_json::Value) -> Classified {
        classify(event, payload.to_string().as_bytes(), &settings()).unwrap()
    }

    #[test]
    fn issues_need_the_label() {
        let labeled = json!({"action": "labeled", "issue": issue(&[]), "label": {"name": "meta-agent"}, "sender": user("bob")});
        let Classified::Run(trigger) = run("issues", labeled) else {
            panic!("not run")
        };
        assert_eq!(trigger.actor().login, "bob");
        assert_eq!(trigger.thread(), Some(7));
        let other = json!({"action": "labeled", "issue": issue(&[]), "label": {"name": "bug"}, "sender": user("bob")});
        assert!(matches!(run("issues", other), Classified::Ignore(_)));
        let opened =
            json!({"action": "opened", "issue": issue(&["meta-agent"]), "sender": user("alice")});
        assert!(matches!(run("issues", opened), Classified::Run(_)));
        let opened = json!({"action": "opened", "issue": issue(&[]), "sender": user("alice")});
        assert!(matches!(run("issues", opened), Classified::Ignore(_)));
        let edited =
            json!({"action": "edited", "issue": issue(&["meta-agent"]), "sender": user("alice")});
        assert!(matches!(run("issues", edited), Classified::Ignore(_)));
    }

    #[test]
    fn comments_carry_their_command_and_edits_are_ignored() {
        let comment = |action: &str, body: &str| {
            json!({"action": action, "issue": issue(&[]), "comment": {"id": 99, "body": body,
                   "user": user("carol"), "created_at": "2026-11-22T05:00:00Z"}, "sender": user("carol")})
        };
        let Classified::Run(Trigger::Comment {
            command,
            comment_id,
            ..
        }) = run(
            "issue_comment",
            comment("created", "/agent fix use a guard"),
        )
        else {
            panic!("not a comment trigger")
        };
        assert_eq!(comment_id, 99);
        assert_eq!(
            command,
            Command::Fix {
                guidance: Some("use a guard".into()),
                allow_test_edits: false,
            }
        );
        assert!(matches!(
            run("issue_comment", comment("edited", "/agent fix")),
            Classified::Ignore(_)
        ));
        assert!(matches!(
            run("issue_comment", comment("created", "thanks!")),
            Classified::Ignore(_)
        ));
    }

    #[test]
    fn a_comment_on_a_pull_request_and_a_review_comment_are_about_that_pull_request() {
        let mut on_pull = issue(&[]);
        on_pull["pull_request"] =
            json!({"url": "https://api.github.com/repos/octo/calc/pulls/7", "merged_at": null});
        let comment = |issue: serde_json::Value| {
            json!({"action": "created", "issue": issue, "comment": {"id": 99, "body": "/agent fix",
                   "user": user("carol"), "created_at": "2026-11-22T05:00:00Z"}, "sender": user("carol")})
        };
        let Classified::Run(trigger) = run("issue_comment", comment(on_pull)) else {
            panic!("not run")
        };
        assert_eq!(trigger.pull_request(), Some(7));
        let Classified::Run(trigger) = run("issue_comment", comment(issue(&[]))) else {
            panic!("not run")
        };
        assert_eq!(
            trigger.pull_request(),
            None,
            "an issue is not a pull request"
        );
        // The payload's branch names are the pull request's text: a person's branch is no
        // reason to ignore the command, and the bot's prefix no reason to trust it.
        for head in ["feature/x", "meta-agent/fake"] {
            let review = json!({"action": "created", "comment": {"id": 5, "body": "/agent fix",
                "user": user("carol"), "created_at": "2026-11-22T05:00:00Z", "path": "a.py", "line": 3},
                "pull_request": {"number": 8, "head": {"ref": head}}});
            let Classified::Run(trigger) = run("pull_request_review_comment", review) else {
                panic!("not run")
            };
            assert_eq!(trigger.pull_request(), Some(8));
        }
    }

    #[test]
    fn failed_runs_of_forks_and_of_pull_requests_are_ignored() {
        let event = |run_event: &str, head: &str| {
            json!({"action": "completed", "repository": {"full_name": "octo/calc", "default_branch": "main"},
                   "workflow_run": {"id": 5, "name": "CI", "conclusion": "failure", "event": run_event,
                   "head_branch": "main", "head_sha": "abc", "actor": user("dave"),
                   "head_repository": {"full_name": head}}})
        };
        assert!(matches!(
            run("workflow_run", event("push", "octo/calc")),
            Classified::Run(Trigger::FailedRun { .. })
        ));
        assert!(matches!(
            run("workflow_run", event("push", "mallory/calc")),
            Classified::Ignore(Ignored::ForkRun { head, .. }) if head == "mallory/calc"
        ));
        assert!(matches!(
            run("workflow_run", event("pull_request", "octo/calc")),
            Classified::Ignore(Ignored::PullRequestChecksOff)
        ));
    }

    #[test]
    fn failed_runs_of_pull_requests_heal_as_the_setting_says() {
        let event = |run_event: &str, branch: &str| {
            json!({"action": "completed", "repository": {"full_name": "octo/calc", "default_branch": "main"},
                   "workflow_run": {"id": 5, "name": "CI", "conclusion": "failure", "event": run_event,
                   "head_branch": branch, "head_sha": "abc", "actor": user("dave"),
                   "head_repository": {"full_name": "octo/calc"}}})
        };
        let of = |classified: Classified| match classified {
            Classified::Run(Trigger::FailedRun { of, .. }) => Ok(of),
            Classified::Run(other) => panic!("{other:?}"),
            Classified::Ignore(reason) => Err(reason),
        };
        use PullRequestChecks::{All, Off, PullRequest};
        let cases = [
            ("pull_request", "feature/x", Off, None),
            (
                "pull_request",
                "feature/x",
                PullRequest,
                Some(RunOf::PullRequestHead),
            ),
            (
                "pull_request",
                "feature/x",
                All,
                Some(RunOf::PullRequestHead),
            ),
            ("push", "feature/x", Off, None),
            ("push", "feature/x", PullRequest, None),
            ("push", "feature/x", All, Some(RunOf::PullRequestHead)),
            ("push", "main", Off, Some(RunOf::DefaultBranch)),
            ("push", "main", All, Some(RunOf::DefaultBranch)),
            ("schedule", "feature/x", All, None),
            ("pull_request_target", "main", All, None),
        ];
        for (run_event, branch, checks, expected) in cases {
            let got = of(run_with("workflow_run", event(run_event, branch), checks));
            assert_eq!(
                got.as_ref().ok(),
                expected.as_ref(),
                "{run_event} {branch} {checks:?}: {got:?}"
            );
        }
        let reason = of(run_with("workflow_run", event("pull_request", "x"), Off)).unwrap_err();
        assert_eq!(reason, Ignored::PullRequestChecksOff);
        let mut fork = event("pull_request", "feature/x");
        fork["workflow_run"]["head_repository"]["full_name"] = json!("mallory/calc");
        let reason = of(run_with("workflow_run", fork, All)).unwrap_err();
        assert!(
            matches!(&reason, Ignored::ForkRun { head, .. } if head == "mallory/calc"),
            "{reason:?}"
        );
    }

    /// Payloads GitHub sent before late 2021 carry no `workflow_run.actor` (one of its published
    /// examples is such): the event's sender is whose permission counts.
    #[test]
    fn a_failed_run_without_an_actor_is_the_senders() {
        let event = |sender: Option<serde_json::Value>| {
            let mut event = json!({"action": "completed", "workflow_run": {"id": 5, "name": "CI",
                   "conclusion": "failure", "head_branch": "main", "head_sha": "abc"}});
            if let Some(sender) = sender {
                event["sender"] = sender;
            }
            event
        };
        let Classified::Run(trigger) = run("workflow_run", event(Some(user("erin")))) else {
            panic!("a failed run with a sender runs");
        };
        assert_eq!(trigger.actor().login, "erin");
        assert!(matches!(
            run("workflow_run", event(None)),
            Classified::Ignore(Ignored::NoActor)
        ));
    }

    #[test]
    fn failed_runs_heal_but_not_on_the_bots_branch() {
        let event = |conclusion: &str, branch: &str| {
            json!({"action": "completed", "workflow_run": {"id": 5, "name": "CI", "conclusion": conclusion,
                   "head_branch": branch, "head_sha": "abc", "actor": user("dave")}})
        };
        assert!(matches!(
            run("workflow_run", event("failure", "main")),
            Classified::Run(Trigger::FailedRun { run_id: 5, .. })
        ));
        assert!(matches!(
            run("workflow_run", event("success", "main")),
            Classified::Ignore(_)
        ));
        assert!(matches!(
            run("workflow_run", event("failure", "meta-agent/fix-x")),
            Classified::Ignore(_)
        ));
        let mut feature = event("failure", "feature/x");
        feature["repository"] = json!({"default_branch": "main"});
        assert!(matches!(
            run("workflow_run", feature),
            Classified::Ignore(Ignored::OtherBranch { .. })
        ));
        let mut on_main = event("failure", "main");
        on_main["repository"] = json!({"default_branch": "main"});
        assert!(matches!(run("workflow_run", on_main), Classified::Run(_)));
    }

    #[test]
    fn dispatch_inputs_are_validated() {
        let event = |issue: &str| json!({"inputs": {"issue": issue, "guidance": "  "}, "sender": user("erin"), "ref": "refs/heads/main"});
        assert_eq!(
            run("workflow_dispatch", event("#12")),
            Classified::Run(Trigger::Dispatch {
                issue: Some(12),
                guidance: None,
                actor: Account {
                    login: "erin".into(),
                    kind: "User".into()
                }
            })
        );
        let err = classify(
            "workflow_dispatch",
            event("twelve").to_string().as_bytes(),
            &settings(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("`issue`"), "{err}");
    }

    #[test]
    fn malformed_payloads_name_the_event_and_place() {
        let err = classify("issue_comment", b"{\"action\": \"created\"}", &settings()).unwrap_err();
        assert!(err.to_string().contains("issue_comment"), "{err}");
        assert!(err.to_string().contains("missing field"), "{err}");
        let err = classify("issues", b"not json", &settings()).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }
}
