//! The one place child processes run. Every gate command and every agent command goes through
//! [`CommandRunner::run`]; nothing else in the crate spawns a process.
//!
//! A command gets a cleared environment built by [`env::child_env`] (secrets never reach it),
//! stdin closed, stdout and stderr captured up to a cap with a truncation marker, a wall-clock
//! timeout, and the guarantee that no descendant survives it: the command runs under the
//! [`supervisor`], a small process (our own binary) that adopts orphans and kills the whole tree.
//! The result says how the command ended, with its duration, whatever happened. Each command
//! is isolated as its [`sandbox::Isolation`] says (network, writes, resource limits); what the
//! machine supports is found by [`detect::detect`].

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod capture;
pub mod detect;
pub mod env;
pub mod home;
pub mod isolate;
mod landlock;
mod namespaces;
mod rlimits;
pub mod sandbox;
pub mod seccomp;
pub mod supervisor;
pub mod trusted;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use capture::Captured;
use meta_agent_protocol::interrupt::Interrupt;
pub use meta_agent_protocol::termination::Termination;
use supervisor::SupervisorStatus;

/// The hidden subcommand that runs the supervisor.
pub const SUPERVISE_SUBCOMMAND: &str = "__supervise";

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// A program and its arguments, run without a shell.
    Argv(Vec<String>),
    /// A shell string, run with `/bin/sh -c` (only when the user wrote a string).
    Shell(String),
}

impl Program {
    /// The program and its arguments as executed (`/bin/sh -c LINE` for a shell string).
    pub fn argv(&self) -> Vec<String> {
        match self {
            Program::Argv(argv) => argv.clone(),
            Program::Shell(line) => vec!["/bin/sh".into(), "-c".into(), line.clone()],
        }
    }

    /// The command as a person would read it (for logs and summaries, never for execution).
    pub fn display(&self) -> String {
        match self {
            Program::Argv(argv) => argv.join(" "),
            Program::Shell(line) => line.clone(),
        }
    }
}

/// Everything about one command run. The environment is complete: nothing is inherited.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub program: Program,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub timeout: Duration,
    pub kill_grace: Duration,
    /// Cap on each captured stream, in bytes.
    pub output_cap: usize,
    /// Network, writes and resource limits (`Isolation::default()` for gates).
    pub isolation: sandbox::Isolation,
}

impl CommandSpec {
    /// The directories beneath which this command may read ([`isolate::visible_roots`], as the
    /// supervisor will compute them from the same policy and environment); `None` when its reads
    /// are not confined (writes anywhere, or no Landlock on this machine).
    pub fn readable_roots(&self) -> Option<Vec<PathBuf>> {
        let sandbox::WritePolicy::Confined { .. } = self.isolation.writes else {
            return None;
        };
        detect::landlock_abi()?;
        let args = sandbox::SandboxArgs::from_policy(&self.isolation, self.timeout);
        let env = home::HomeEnv::from_lookup(|name| self.env.get(name).map(Into::into));
        Some(isolate::visible_roots(&args, &self.cwd, &env))
    }
}

/// The result of one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandOutput {
    pub termination: Termination,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
    /// Descendants the command left behind, killed after it ended.
    pub descendants_killed: u32,
}

/// Why a command could not be run at all (not: why it failed).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot start the supervisor {path}: {source}")]
    Supervisor {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("working directory {path} is not usable: {source}")]
    Workdir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot capture the output of `{command}`: {source}")]
    Capture {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create the supervisor's status pipe: {0}")]
    StatusFile(#[source] std::io::Error),
}

/// Runs commands. One real implementation, [`Executor`]; tests may record or fail on purpose.
pub trait CommandRunner: Send + Sync {
    fn run(
        &self,
        spec: CommandSpec,
    ) -> impl Future<Output = Result<CommandOutput, ExecError>> + Send;
}

/// Runs every command under the supervisor (our own binary).
#[derive(Debug, Clone)]
pub struct Executor {
    supervisor: PathBuf,
    /// Keeps the descriptor `supervisor` names open.
    _held: Option<trusted::OwnBinary>,
    /// When set, the running command's whole tree is stopped (it ends `Cancelled`).
    interrupt: Interrupt,
}

impl Executor {
    /// `supervisor` is a meta-agent binary at a path (tests; the bot itself uses
    /// [`Executor::from_own_binary`]).
    pub fn new(supervisor: PathBuf) -> Self {
        Executor {
            supervisor,
            _held: None,
            interrupt: Interrupt::never(),
        }
    }

    /// The same executor, stopping the running command (its whole process tree, through the
    /// supervisor) once `interrupt` is set; a command started after that ends `Cancelled` at once.
    pub fn interruptible(&self, interrupt: Interrupt) -> Executor {
        Executor {
            interrupt,
            ..self.clone()
        }
    }

    /// Runs the supervisor from the bot's own binary, held open since start-up and executed
    /// through that descriptor, never by path ([`trusted`]).
    pub fn from_own_binary(own: trusted::OwnBinary) -> Self {
        Executor {
            supervisor: own.exec_path(),
            _held: Some(own),
            interrupt: Interrupt::never(),
        }
    }
}

impl CommandRunner for Executor {
    async fn run(&self, spec: CommandSpec) -> Result<CommandOutput, ExecError> {
        if self.interrupt.reason().is_some() {
            return Ok(CommandOutput {
                termination: Termination::Cancelled,
                stdout: Captured::default(),
                stderr: Captured::default(),
                duration: Duration::ZERO,
                descendants_killed: 0,
            });
        }
        std::fs::metadata(&spec.cwd).map_err(|source| ExecError::Workdir {
            path: spec.cwd.clone(),
            source,
        })?;
        let (status_read, status_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| ExecError::StatusFile(e.into()))?;
        let started = Instant::now();
        let spawned = self.spawn_supervisor(&spec, &status_write);
        // The supervisor holds the only other copy: its exit is the pipe's end of file.
        drop(status_write);
        let mut child = spawned?;
        let cap = spec.output_cap;
        let (stdout_end, stdout_ended) = tokio::sync::oneshot::channel();
        let (stderr_end, stderr_ended) = tokio::sync::oneshot::channel();
        let stdout = child
            .stdout
            .take()
            .map(|out| tokio::spawn(capture::capture(out, cap, stdout_ended)));
        let stderr = child
            .stderr
            .take()
            .map(|err| tokio::spawn(capture::capture(err, cap, stderr_ended)));
        let backstop = spec.timeout + spec.kill_grace + Duration::from_secs(10);
        let mut interrupted = false;
        let waited = tokio::select! {
            waited = tokio::time::timeout(backstop, child.wait()) => waited.map(|_| ()),
            () = self.interrupt.wait() => {
                // The supervisor stops the tree (SIGTERM, grace, SIGKILL) and reports `cancelled`.
                interrupted = true;
                stop_supervisor(&mut child).await;
                Ok(())
            }
        };
        if waited.is_err() {
            stop_supervisor(&mut child).await;
        }
        // The supervisor is gone: reading its output is bounded from here on.
        drop((stdout_end, stderr_end));
        let command = spec.program.display();
        let stdout = join_capture(stdout, &command).await?;
        let stderr = join_capture(stderr, &command).await?;
        let status = read_status(status_read);
        report_missing_isolation(&status, &command);
        Ok(CommandOutput {
            termination: match termination_of(&status, waited.is_err()) {
                Termination::NotStarted { .. } if interrupted => Termination::Cancelled,
                termination => termination,
            },
            stdout,
            stderr,
            duration: started.elapsed(),
            descendants_killed: status.map_or(0, |s| s.descendants_killed),
        })
    }
}

impl Executor {
    fn spawn_supervisor(
        &self,
        spec: &CommandSpec,
        status: &std::os::fd::OwnedFd,
    ) -> Result<tokio::process::Child, ExecError> {
        use std::os::fd::AsRawFd;
        let status_fd = status.as_raw_fd();
        let mut command = tokio::process::Command::new(&self.supervisor);
        command
            .arg(SUPERVISE_SUBCOMMAND)
            .arg("--timeout-ms")
            .arg(spec.timeout.as_millis().to_string())
            .arg("--grace-ms")
            .arg(spec.kill_grace.as_millis().to_string())
            .arg("--status-fd")
            .arg(status_fd.to_string())
            .args(sandbox::SandboxArgs::from_policy(&spec.isolation, spec.timeout).to_argv())
            .arg("--")
            .args(spec.program.argv())
            .env_clear()
            .envs(&spec.env)
            .current_dir(&spec.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: only a system call on a descriptor number between fork and exec: the status
        // pipe's write end is the one descriptor the supervisor inherits besides stdio.
        unsafe {
            command.pre_exec(move || {
                let fd = std::os::fd::BorrowedFd::borrow_raw(status_fd);
                nix::fcntl::fcntl(
                    fd,
                    nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
                )?;
                Ok(())
            });
        }
        command.spawn().map_err(|source| ExecError::Supervisor {
            path: self.supervisor.clone(),
            source,
        })
    }
}

/// Asks the supervisor to stop the tree (SIGTERM), then kills it if it does not.
async fn stop_supervisor(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    if tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}

async fn join_capture(
    task: Option<tokio::task::JoinHandle<std::io::Result<Captured>>>,
    command: &str,
) -> Result<Captured, ExecError> {
    let Some(task) = task else {
        return Ok(Captured::default());
    };
    match task.await {
        Ok(Ok(captured)) => Ok(captured),
        Ok(Err(source)) => Err(ExecError::Capture {
            command: command.to_owned(),
            source,
        }),
        Err(join) => Err(ExecError::Capture {
            command: command.to_owned(),
            source: std::io::Error::other(join),
        }),
    }
}

fn report_missing_isolation(status: &Option<SupervisorStatus>, command: &str) {
    for note in status.iter().flat_map(|s| &s.isolation_notes) {
        tracing::warn!(command, "isolation incomplete: {note}");
    }
}

/// The supervisor's status from its pipe, read after it exited (so the read cannot block: no
/// other process holds the write end). Bounded; absent when the supervisor wrote none.
fn read_status(pipe: std::os::fd::OwnedFd) -> Option<SupervisorStatus> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::from(pipe)
        .take(MAX_STATUS_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Far more than a status takes.
const MAX_STATUS_BYTES: u64 = 1 << 20;

/// How the command ended, from the supervisor's status (absent when the supervisor itself died).
fn termination_of(status: &Option<SupervisorStatus>, backstop_hit: bool) -> Termination {
    let Some(status) = status else {
        return if backstop_hit {
            Termination::TimedOut
        } else {
            Termination::NotStarted {
                reason: "the supervisor ended without a status".into(),
            }
        };
    };
    if let Some(reason) = &status.spawn_error {
        return Termination::NotStarted {
            reason: reason.clone(),
        };
    }
    if status.timed_out {
        return Termination::TimedOut;
    }
    if status.cancelled {
        return Termination::Cancelled;
    }
    match (status.exit_code, status.signal) {
        (Some(code), _) => Termination::Exited { code },
        (None, Some(signal)) => Termination::Signaled { signal },
        (None, None) => Termination::NotStarted {
            reason: "no exit status was recorded".into(),
        },
    }
}
