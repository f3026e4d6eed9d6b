//! What a person reads about gates that could not judge the code: the line a gate table shows
//! ([`headline`]), the sentence of an environment escalation ([`describe`]), and the report's
//! account of each gate that could not start with the tool's own words and what to do
//! ([`why`]). Pure functions of [`GateProblem`] and [`StartFailure`]. Also the isolation line
//! a run prints at start ([`isolation`], of what the sandbox found on the machine).

use std::fmt::Write;

use meta_agent_protocol::records::{GateProblem, StartFailure};

/// One line for a gate table: what kept the gate from judging the code.
pub fn headline(problem: &GateProblem) -> String {
    match problem {
        GateProblem::CouldNotStart { reason } => match reason.strip_prefix("cannot start ") {
            Some(rest) => format!("could not start {rest}"),
            None => format!("could not start: {reason}"),
        },
        GateProblem::BadCommand { code: 127, .. } => {
            "could not start: the shell found no such program (exit 127)".to_owned()
        }
        GateProblem::BadCommand { code, .. } => {
            format!("could not start: the shell could not execute the command (exit {code})")
        }
        GateProblem::PathHidden { path, .. } => {
            format!("could not start: the sandbox hides {path}")
        }
        GateProblem::RunnerMissing { runner, .. } => {
            format!("could not start: the test runner `{runner}` is not installed")
        }
        GateProblem::TimedOut => "ran past its timeout".to_owned(),
    }
}

/// The sentence of an environment escalation (no trailing period).
pub fn describe(failures: &[StartFailure], pristine: bool) -> String {
    let gates: Vec<String> = failures
        .iter()
        .map(|failure| format!("`{}` ({})", failure.gate, cause(&failure.problem)))
        .collect();
    let which = match gates.len() {
        1 => format!("the gate {} could not start", gates.join("")),
        _ => format!("the gates {} could not start", gates.join(", ")),
    };
    if pristine {
        format!(
            "{which} on the pristine checkout of the change (the worktree's gates passed): a \
             problem of the environment, not of the change, which stays unverified"
        )
    } else {
        format!(
            "{which}: a problem of the environment, not the code; the run stopped before any \
             model call"
        )
    }
}

/// The cause of a start failure in a few words, for [`describe`].
fn cause(problem: &GateProblem) -> String {
    match problem {
        GateProblem::PathHidden { path, .. } => format!("the sandbox hides {path}"),
        GateProblem::RunnerMissing { runner, .. } => format!("`{runner}` is not installed"),
        GateProblem::BadCommand { code: 127, error } => format!("not found: {error}"),
        GateProblem::BadCommand { error, .. } => format!("not executable: {error}"),
        GateProblem::CouldNotStart { reason } => reason.clone(),
        GateProblem::TimedOut => "it timed out".to_owned(),
    }
}

/// The report's "Why it stopped" for an environment escalation: each gate, what the tool said,
/// and what to do.
pub fn why(failures: &[StartFailure], pristine: bool) -> String {
    let mut out = if pristine {
        String::from(
            "**Why it stopped:** a problem of the environment, not of the change: the gates \
             passed in the worktree, but on the pristine checkout of the tree to commit (a \
             fresh directory, the worktree's ignored files copied in) these could not start, so \
             the change is unverified, not failed. Nothing was committed as verified.\n\n",
        )
    } else {
        String::from(
            "**Why it stopped:** a problem of the environment, not the code: these gates could \
             not start, so nothing about the code was judged. The run stopped before any model \
             call and recorded nothing in hindsight.\n\n",
        )
    };
    for failure in failures {
        let _ = writeln!(
            out,
            "- gate `{}` {}.",
            failure.gate,
            headline(&failure.problem)
        );
        if let Some(said) = tool_said(&failure.problem) {
            let _ = writeln!(out, "  - it said: `{}`", code_span(said));
        }
        let _ = writeln!(
            out,
            "  - **What to do:** {}.",
            advice(&failure.problem, pristine)
        );
    }
    out.push('\n');
    out
}

/// The tool's own line, where the problem carries one.
fn tool_said(problem: &GateProblem) -> Option<&str> {
    let said = match problem {
        GateProblem::CouldNotStart { .. } | GateProblem::TimedOut => return None,
        GateProblem::BadCommand { error, .. }
        | GateProblem::PathHidden { error, .. }
        | GateProblem::RunnerMissing { error, .. } => error.as_str(),
    };
    (!said.is_empty()).then_some(said)
}

/// What to do about a gate that could not judge the code.
pub fn advice(problem: &GateProblem, pristine: bool) -> String {
    match problem {
        // Only the pristine checkout failed: what it cannot read is the worktree's (a path of
        // one session, nothing to grant).
        GateProblem::PathHidden { path, .. } if pristine => format!(
            "`{path}` is outside the pristine checkout and the directories commands may read: a \
             virtualenv's scripts name the directory it was made in, so one copied from the \
             worktree still points into the worktree. Run the tool through the interpreter \
             (`.venv/bin/python -m pytest` rather than `.venv/bin/pytest`), or set \
             `verify.pristine: false` (README, \"Verified means the commit\", says what that \
             gives up)"
        ),
        GateProblem::PathHidden { path, grant, .. } => format!(
            "commands read only the worktree, the system and toolchain directories and \
             `sandbox.read`, and `{path}` is outside them. Keep what the gate needs inside the \
             repository (a virtualenv: a `setup:` command such as `python3 -m venv .venv && \
             .venv/bin/pip install -e .`, the gate running `.venv/bin/python -m ...`){}",
            grant_clause(grant.as_deref())
        ),
        GateProblem::RunnerMissing { runner, .. } => format!(
            "install `{runner}` where the gate runs it (a `setup:` command: `pip install \
             pytest` into the gate's virtualenv, `npm ci`, `cargo install ...`), or correct the \
             gate's `run:` in the configuration"
        ),
        GateProblem::CouldNotStart { .. } | GateProblem::BadCommand { code: 127, .. } => {
            "install the program the gate runs (a `setup:` command or a workflow step before \
             meta-agent), or correct the gate's `run:` in the configuration"
                .to_owned()
        }
        GateProblem::BadCommand { .. } => {
            "make the command executable, or run it through its interpreter, or correct the \
             gate's `run:` in the configuration"
                .to_owned()
        }
        GateProblem::TimedOut => {
            "raise the gate's `timeout:` in the configuration, or make the suite faster".to_owned()
        }
    }
}

/// How `sandbox.read` could help: the directory to grant, or why none can be.
fn grant_clause(grant: Option<&str>) -> String {
    match grant {
        Some(dir) => format!(
            ", or let commands read it: `sandbox: {{read: [{dir}]}}` in `.meta-agent.yml` \
             (README, \"Reading outside the worktree\", says what that gives up)"
        ),
        None => "; `sandbox.read` cannot grant it (a home as a whole, a directory every \
                 process shares and credentials are never readable)"
            .to_owned(),
    }
}

/// Text for inline code: one line, no backtick to end the span early.
fn code_span(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .replace('`', "'")
        .trim()
        .to_owned()
}

/// What isolation the machine gave the children, as `exec::detect` found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Isolation {
    /// The Landlock ABI version, when Landlock is enabled.
    pub landlock_abi: Option<u32>,
    /// Unprivileged user namespaces with mount and network namespaces work.
    pub user_namespaces: bool,
    /// The kernel enforces the process limit (it does not for root).
    pub nproc_enforced: bool,
    /// The memory a process may allocate, in GiB.
    pub memory_gib: u64,
}

/// How commands' memory is limited, for the isolation line: by what a process allocates
/// (`RLIMIT_DATA`), so runtimes that reserve large address ranges run; per process, not per
/// command (no cgroup: see README, "Limits").
const MEMORY_LIMIT: &str = "RLIMIT_DATA: address space only reserved is not counted; no cgroup, so not a total per command";

/// The isolation line for logs and job summaries.
pub fn isolation(found: &Isolation) -> String {
    let landlock = match found.landlock_abi {
        Some(abi) => format!("Landlock ABI {abi} (writes and reads confined)"),
        None => "no Landlock (writes and reads NOT confined)".to_owned(),
    };
    let namespaces = if found.user_namespaces {
        "user+PID+network namespaces (no process outlives its command, network can be cut, .git read-only, credentials hidden)"
    } else {
        "no user namespaces (processes MAY outlive their command, network NOT cut, .git writable, credentials visible)"
    };
    let nproc = if found.nproc_enforced {
        "process limit enforced"
    } else {
        "process limit NOT enforced (running as root)"
    };
    format!(
        "isolation: {landlock}; {namespaces}; {nproc}; memory: {} GiB allocated per process \
         ({MEMORY_LIMIT}); file size, processes and CPU time limited; no_new_privs always",
        found.memory_gib
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failures() -> Vec<StartFailure> {
        let failure = |gate: &str, problem| StartFailure {
            gate: gate.to_owned(),
            problem,
        };
        vec![
            failure(
                "tests",
                GateProblem::PathHidden {
                    path: "/tmp/tools/venv/pyvenv.cfg".to_owned(),
                    error: "PermissionError: [Errno 13] Permission denied: \
                            '/tmp/tools/venv/pyvenv.cfg'"
                        .to_owned(),
                    grant: Some("/tmp/tools/venv".to_owned()),
                },
            ),
            failure(
                "home",
                GateProblem::PathHidden {
                    path: "/root/.bashrc".to_owned(),
                    error: "PermissionError: [Errno 13] Permission denied: '/root/.bashrc'"
                        .to_owned(),
                    grant: None,
                },
            ),
            failure(
                "lint",
                GateProblem::BadCommand {
                    code: 127,
                    error: "/bin/sh: 1: ruff: not found".to_owned(),
                },
            ),
            failure(
                "unit",
                GateProblem::RunnerMissing {
                    runner: "pytest".to_owned(),
                    error: "/repo/.venv/bin/python: No module named pytest".to_owned(),
                },
            ),
            failure(
                "docs",
                GateProblem::CouldNotStart {
                    reason: "cannot start `mkdocs`: No such file or directory (os error 2)"
                        .to_owned(),
                },
            ),
            failure(
                "script",
                GateProblem::BadCommand {
                    code: 126,
                    error: "/bin/sh: 1: ./check.sh: Permission denied".to_owned(),
                },
            ),
        ]
    }

    /// The report's account at the baseline and on the pristine checkout, and the sentences.
    #[test]
    fn gates_that_could_not_start_are_told_with_the_tools_words_and_what_to_do() {
        let failures = failures();
        insta::assert_snapshot!("environment_baseline", why(&failures, false));
        insta::assert_snapshot!("environment_pristine", why(&failures[..1], true));
        let sentences = [
            describe(&failures[..1], false),
            describe(&failures[2..4], false),
            describe(&failures[..1], true),
        ];
        insta::assert_snapshot!("environment_sentences", sentences.join("\n"));
    }

    #[test]
    fn every_problem_has_its_table_line() {
        let lines: Vec<String> = failures()
            .iter()
            .map(|f| headline(&f.problem))
            .chain([headline(&GateProblem::TimedOut)])
            .collect();
        insta::assert_snapshot!("environment_headlines", lines.join("\n"));
    }

    #[test]
    fn the_isolation_line_names_every_feature() {
        let confined = Isolation {
            landlock_abi: Some(5),
            user_namespaces: true,
            nproc_enforced: true,
            memory_gib: 8,
        };
        let open = Isolation {
            landlock_abi: None,
            user_namespaces: false,
            nproc_enforced: false,
            memory_gib: 8,
        };
        let lines = [isolation(&confined), isolation(&open)];
        insta::assert_snapshot!("isolation_lines", lines.join("\n"));
    }
}
