//! The setup phase of a run: the configured `setup:` commands (dependency fetches such as
//! `cargo fetch --locked`, `npm ci`, `pip install -e .`), run once, in order, before the build,
//! with the network on — the gates of the run are offline afterwards.
//!
//! Each command goes through the exec module with the same isolation as a gate (cleared
//! environment plus the credentials its configuration names, `setup[].credentials`, which no
//! other command ever gets, writes confined to the worktree, the temporary directory and the toolchains'
//! caches, limits, timeout) except the network, and is recorded as a `CommandRun` event. The first
//! command that fails stops the phase; the caller ends the run with [`SetupFailure`]'s message. It
//! must not run anything the model wrote: the engine calls it before the first act.

use std::fmt;

use super::runner::GateRunContext;
use super::verdict;
use meta_agent_config::{GateCommand, SetupCommand};
use meta_agent_exec::sandbox::{Isolation, NetworkPolicy};
use meta_agent_exec::{CommandRunner, CommandSpec, Program, env::child_env};
use meta_agent_protocol::event::Event;

/// Lines of a failed command's output quoted in the failure message.
const TAIL_LINES: usize = 5;

/// A setup command that failed, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupFailure {
    /// The command as configured.
    pub command: String,
    /// How it ended (`exited with code 1`, `timed out after 20m`, `could not start: …`).
    pub reason: String,
    /// The last lines of its output (stderr, then stdout).
    pub tail: String,
}

impl fmt::Display for SetupFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "setup command `{}` {}", self.command, self.reason)?;
        if !self.tail.is_empty() {
            write!(f, ": {}", self.tail)?;
        }
        Ok(())
    }
}

/// Runs the setup commands in order, network on; stops at the first failure.
pub async fn run_setup<R: CommandRunner>(
    ctx: &GateRunContext<'_, R>,
    commands: &[SetupCommand],
) -> Result<(), SetupFailure> {
    for command in commands {
        run_one(ctx, command).await?;
    }
    Ok(())
}

async fn run_one<R: CommandRunner>(
    ctx: &GateRunContext<'_, R>,
    setup: &SetupCommand,
) -> Result<(), SetupFailure> {
    let program = match &setup.command {
        GateCommand::Shell(line) => Program::Shell(line.clone()),
        GateCommand::Argv(argv) => Program::Argv(argv.clone()),
    };
    let command = program.display();
    let mut env = child_env(
        ctx.parent_env.iter().cloned(),
        &ctx.sandbox.env_allow,
        setup.env.iter(),
    );
    for name in &setup.credentials {
        let value = ctx.parent_env.iter().find(|(var, _)| var == name);
        let Some((_, value)) = value else {
            return Err(SetupFailure {
                command,
                reason: format!(
                    "needs the credential `{name}` (setup.credentials), which is not set in \
                     meta-agent's environment"
                ),
                tail: String::new(),
            });
        };
        env.insert(name.clone(), value.clone());
    }
    let cwd = ctx.repo_root.join(&setup.workdir);
    let isolation = Isolation {
        network: NetworkPolicy::On,
        ..Isolation::for_repository_commands(&env, &ctx.policy.writable_dirs(ctx.repo_root))
            .with_caches_writable()
            .reading(ctx.policy.readable_dirs())
    };
    let spec = CommandSpec {
        program,
        cwd: cwd.clone(),
        env,
        timeout: setup.timeout,
        kill_grace: ctx.sandbox.kill_grace,
        output_cap: usize::try_from(ctx.sandbox.output_cap).unwrap_or(usize::MAX),
        isolation,
    };
    let timeout_ms = u64::try_from(setup.timeout.as_millis()).unwrap_or(u64::MAX);
    let output = ctx.runner.run(spec).await.map_err(|err| SetupFailure {
        command: command.clone(),
        reason: format!("could not run: {err}"),
        tail: String::new(),
    })?;
    let failure = verdict::termination_reason(&output.termination, timeout_ms)
        .map(|reason| meta_agent_render::gates::reason(&reason));
    ctx.events.emit(&Event::CommandRun {
        command: command.clone(),
        cwd: cwd.display().to_string(),
        result: failure.clone().unwrap_or_else(|| "exit 0".into()),
        duration_ms: u64::try_from(output.duration.as_millis()).unwrap_or(u64::MAX),
    });
    match failure {
        None => Ok(()),
        Some(reason) => Err(SetupFailure {
            command,
            reason,
            tail: tail(&output.stderr.text, &output.stdout.text),
        }),
    }
}

/// The last few lines of output, stderr first, on one line.
fn tail(stderr: &str, stdout: &str) -> String {
    let text = super::runner::strip_ansi(if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    });
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failure_names_the_command_and_quotes_the_end_of_its_output() {
        let failure = SetupFailure {
            command: "npm ci".into(),
            reason: "exited with code 1".into(),
            tail: tail("a\n\nb\nc\nd\ne\nf\n", "ignored"),
        };
        assert_eq!(
            failure.to_string(),
            "setup command `npm ci` exited with code 1: b / c / d / e / f"
        );
        assert_eq!(tail("  \n", "only stdout\n"), "only stdout");
    }
}
