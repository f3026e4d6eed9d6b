//! The supervisor: a small process between meta-agent and every command it runs.
//!
//! meta-agent starts its own binary as `meta-agent __supervise ... -- PROGRAM ARGS`, with the
//! child's cleared environment, so the supervisor holds no secrets. The supervisor becomes a
//! child subreaper (orphans of the command are reparented to it, even double-forked daemons),
//! starts the command in its own process group with stdin closed, and waits. When the command
//! exits, times out, or meta-agent goes away, it kills every remaining descendant and reaps them,
//! then writes a small JSON status to the pipe meta-agent gave it (an inherited descriptor: it
//! opens no path a sandboxed command could swap for a link). No process outlives it. It is synchronous (no runtime),
//! so reaping any child with `waitpid(-1)` is safe here.
//!
//! Before starting the command it prepares the command's isolation ([`super::isolate`]): resource
//! limits, `no_new_privs`, Landlock write confinement, private namespaces (network cut, `.git`
//! read-only). The child applies it just before `exec`; the supervisor itself stays unconfined so
//! it can write its status file. A refusal (isolation required but missing) is a spawn error.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{self, SigHandler, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use super::isolate::Confinement;

/// The supervisor's command line (after `__supervise`).
#[derive(Debug, Clone, clap::Args)]
pub struct SupervisorArgs {
    /// Wall-clock limit for the command, in milliseconds.
    #[arg(long)]
    pub timeout_ms: u64,
    /// Time between SIGTERM and SIGKILL, in milliseconds.
    #[arg(long)]
    pub grace_ms: u64,
    /// The inherited descriptor (a pipe to meta-agent) the status JSON is written to. Never a
    /// path: the supervisor opens nothing a sandboxed command could have replaced.
    #[arg(long)]
    pub status_fd: i32,
    /// The command's isolation.
    #[command(flatten)]
    pub sandbox: super::sandbox::SandboxArgs,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    pub argv: Vec<String>,
}

/// What the supervisor reports about the command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupervisorStatus {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// meta-agent went away or asked to stop before the command ended.
    pub cancelled: bool,
    /// Descendants still alive after the command ended (or was stopped), killed by the supervisor.
    pub descendants_killed: u32,
    /// Why the command could not be started.
    pub spawn_error: Option<String>,
    pub duration_ms: u64,
    /// Isolation the policy asked for that this machine could not provide (best effort).
    #[serde(default)]
    pub isolation_notes: Vec<String>,
}

static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_: i32) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// Runs the supervisor; returns the process exit code it should end with.
pub fn supervise(args: &SupervisorArgs) -> u8 {
    // Re-executed through a descriptor (`/proc/self/fd/N`), the process would be named after the
    // descriptor's number; named after the bot, `ps` and people can tell what it is.
    let _ = nix::sys::prctl::set_name(c"meta-agent");
    let Some(mut channel) = status_channel(args.status_fd) else {
        return 125;
    };
    let status = run(args);
    let written = serde_json::to_vec(&status)
        .ok()
        .and_then(|json| std::io::Write::write_all(&mut channel, &json).ok());
    match (written, status.exit_code) {
        (None, _) => 125,
        (Some(()), Some(code)) => u8::try_from(code & 0xff).unwrap_or(1),
        (Some(()), None) => 1,
    }
}

/// Takes the inherited status descriptor, marked close-on-exec first so the command never
/// inherits it. `None` when it is not an open pipe.
fn status_channel(fd: i32) -> Option<std::fs::File> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    use std::os::fd::{BorrowedFd, FromRawFd};
    if fd <= 2 {
        return None;
    }
    // SAFETY: checked to be open (F_GETFD) before it is owned; nothing else here uses it.
    unsafe {
        fcntl(BorrowedFd::borrow_raw(fd), FcntlArg::F_GETFD).ok()?;
        fcntl(
            BorrowedFd::borrow_raw(fd),
            FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC),
        )
        .ok()?;
        let file = std::fs::File::from_raw_fd(fd);
        file.metadata()
            .is_ok_and(|meta| meta.file_type().is_fifo())
            .then_some(file)
    }
}

fn run(args: &SupervisorArgs) -> SupervisorStatus {
    let started = Instant::now();
    let parent = nix::unistd::getppid();
    let _ = nix::sys::prctl::set_child_subreaper(true);
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        // SAFETY: the handler only stores into an atomic, which is async-signal-safe.
        let _ = unsafe { signal::signal(sig, SigHandler::Handler(request_stop)) };
    }
    let mut status = SupervisorStatus::default();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut confinement = match super::isolate::prepare(&args.sandbox, &cwd) {
        Ok(confinement) => confinement,
        Err(reason) => {
            status.spawn_error = Some(format!("cannot start `{}`: {reason}", args.argv[0]));
            return status;
        }
    };
    status.isolation_notes = confinement.notes.clone();
    // Kept until every process of the command is gone, then removed.
    let scratch = confinement.scratch.take();
    let child = match spawn(&args.argv, confinement, scratch.as_ref()) {
        Ok(child) => child,
        Err(err) => {
            status.spawn_error = Some(format!("cannot start `{}`: {err}", args.argv[0]));
            return status;
        }
    };
    let deadline = started + Duration::from_millis(args.timeout_ms);
    let ended = wait_for(child, deadline, parent, &mut status);
    if !ended {
        stop_tree(
            child,
            Duration::from_millis(args.grace_ms),
            parent,
            &mut status,
        );
    }
    status.descendants_killed += kill_descendants();
    drop(scratch);
    status.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    status
}

fn spawn(
    argv: &[String],
    mut confinement: Confinement,
    scratch: Option<&super::isolate::Scratch>,
) -> std::io::Result<Pid> {
    let mut command = std::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .process_group(0);
    if let Some(scratch) = scratch {
        // The toolchains keep their own variables (read-only to the command); HOME is new, and
        // so is the temporary directory.
        let env = super::isolate::home_env();
        for (name, dir) in env.toolchain_env() {
            command.env(name, dir);
        }
        command.env("HOME", scratch.home.path());
        for name in super::home::TEMP_VARS {
            command.env(name, scratch.temp.path());
        }
    }
    // SAFETY: the supervisor is single-threaded, so the child may run the prepared confinement
    // (system calls on data built before the fork) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            confinement.apply()
        });
    }
    let child = command.spawn()?;
    let pid = i32::try_from(child.id()).map_err(std::io::Error::other)?;
    // The std handle is not used to wait: every child is reaped by waitpid(-1) below.
    std::mem::forget(child);
    Ok(Pid::from_raw(pid))
}

/// Waits for the command; true when it ended on its own, false on timeout or stop request.
fn wait_for(child: Pid, deadline: Instant, parent: Pid, status: &mut SupervisorStatus) -> bool {
    let mut pause = Duration::from_millis(1);
    loop {
        if reap(child, status) {
            return true;
        }
        if Instant::now() >= deadline {
            status.timed_out = true;
            return false;
        }
        if STOP_REQUESTED.load(Ordering::SeqCst) || nix::unistd::getppid() != parent {
            status.cancelled = true;
            return false;
        }
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Reaps every exited child; true when `main` was among them (its status recorded).
fn reap(main: Pid, status: &mut SupervisorStatus) -> bool {
    let mut main_ended = false;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => {
                status.exit_code = Some(code);
                main_ended = true;
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => {
                status.signal = Some(sig as i32);
                main_ended = true;
            }
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return main_ended,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return main_ended,
        }
    }
}

/// SIGTERM to the command's group and descendants, a grace period, then SIGKILL to the group
/// (stragglers elsewhere in the tree are left to [`kill_descendants`]). The grace ends early
/// when meta-agent (`parent`) is gone: it exited at once on a second signal, and nothing may
/// outlive it.
fn stop_tree(child: Pid, grace: Duration, parent: Pid, status: &mut SupervisorStatus) {
    let _ = signal::killpg(child, Signal::SIGTERM);
    for pid in descendants() {
        let _ = signal::kill(pid, Signal::SIGTERM);
    }
    let until = Instant::now() + grace;
    while Instant::now() < until && nix::unistd::getppid() == parent {
        if reap(child, status) && descendants().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = signal::killpg(child, Signal::SIGKILL);
    let _ = reap(child, status);
}

/// Kills and reaps every remaining descendant; returns how many were killed.
fn kill_descendants() -> u32 {
    let mut killed = BTreeSet::new();
    for _ in 0..500 {
        let alive = descendants();
        if alive.is_empty() {
            let mut ignored = SupervisorStatus::default();
            reap(Pid::from_raw(0), &mut ignored);
            if descendants().is_empty() {
                break;
            }
            continue;
        }
        for pid in alive {
            let _ = signal::kill(pid, Signal::SIGKILL);
            killed.insert(pid.as_raw());
        }
        let mut ignored = SupervisorStatus::default();
        reap(Pid::from_raw(0), &mut ignored);
        std::thread::sleep(Duration::from_millis(2));
    }
    u32::try_from(killed.len()).unwrap_or(u32::MAX)
}

/// Every process descended from this one (zombies included), from `/proc`.
fn descendants() -> Vec<Pid> {
    let me = std::process::id() as i32;
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        // Zombies too: a leader that exited while its other threads run shows as one, and
        // its children hang below it; SIGKILL to a real zombie is harmless.
        if let Some((ppid, _)) = read_stat(pid) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut stack = vec![me];
    while let Some(pid) = stack.pop() {
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
            found.push(Pid::from_raw(child));
            stack.push(child);
        }
    }
    found
}

/// Parent pid and whether the process is a zombie, from `/proc/PID/stat`.
fn read_stat(pid: i32) -> Option<(i32, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((ppid, state == "Z"))
}
