//! The `run_command` tool: a program the model names, run through the one child-process module
//! ([`meta_agent_exec::CommandRunner`]) like a gate: argv only (no shell string is built here), the
//! environment rebuilt by [`child_env`] from the parent's (secrets never pass), the worktree as
//! working directory, a timeout, capped output and the configured isolation.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::ToolError;
use meta_agent_exec::env::child_env;
use meta_agent_exec::sandbox::Isolation;
use meta_agent_exec::{CommandRunner, CommandSpec, Program, Termination};

/// How the agent's commands run.
#[derive(Debug, Clone)]
pub struct CommandSettings {
    pub timeout: Duration,
    pub kill_grace: Duration,
    /// Cap on each captured stream, in bytes.
    pub output_cap: usize,
    /// Variables passed through beyond the built-in allowlist (as for gates).
    pub env_allow: Vec<String>,
    pub isolation: Isolation,
}

impl Default for CommandSettings {
    fn default() -> Self {
        CommandSettings {
            timeout: Duration::from_secs(300),
            kill_grace: Duration::from_secs(2),
            output_cap: 64 * 1024,
            env_allow: Vec::new(),
            isolation: Isolation::default(),
        }
    }
}

#[derive(Deserialize)]
pub struct RunArgs {
    argv: Vec<String>,
}

/// What a command needs from the tool box.
pub struct CommandContext<'a, R: CommandRunner> {
    pub root: &'a Path,
    pub runner: &'a R,
    pub settings: &'a CommandSettings,
    pub parent_env: &'a [(String, String)],
}

/// Runs the command; returns its report and whether it succeeded.
pub async fn run<R: CommandRunner>(
    ctx: &CommandContext<'_, R>,
    args: RunArgs,
) -> Result<(String, bool), ToolError> {
    if args.argv.first().is_none_or(String::is_empty) {
        return Err(ToolError::Malformed {
            tool: "run_command".into(),
            detail: "argv must name a program".into(),
        });
    }
    let no_extra: [(&String, &String); 0] = [];
    let spec = CommandSpec {
        program: Program::Argv(args.argv),
        cwd: ctx.root.to_path_buf(),
        env: child_env(
            ctx.parent_env.iter().cloned(),
            &ctx.settings.env_allow,
            no_extra,
        ),
        timeout: ctx.settings.timeout,
        kill_grace: ctx.settings.kill_grace,
        output_cap: ctx.settings.output_cap,
        isolation: ctx.settings.isolation.clone(),
    };
    let output = ctx
        .runner
        .run(spec)
        .await
        .map_err(|err| ToolError::CommandFailed(err.to_string()))?;
    let report = format!(
        "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        ending(&output.termination),
        output.stdout.text,
        output.stderr.text
    );
    Ok((report, output.termination.success()))
}

fn ending(termination: &Termination) -> String {
    match termination {
        Termination::Exited { code } => format!("exit code {code}"),
        Termination::Signaled { signal } => format!("killed by signal {signal}"),
        Termination::TimedOut => "timed out (the whole process tree was killed)".into(),
        Termination::Cancelled => "cancelled".into(),
        Termination::NotStarted { reason } => format!("not started: {reason}"),
    }
}
