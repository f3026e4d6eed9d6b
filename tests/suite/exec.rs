//! The one child-process module: environment, stdin, output caps, timeouts and the process tree.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use meta_agent::exec::env::child_env;
use meta_agent::exec::sandbox::Isolation;
use meta_agent::exec::{CommandRunner, CommandSpec, Executor, Program, Termination};

fn executor() -> Executor {
    Executor::new(env!("CARGO_BIN_EXE_meta-agent").into())
}

fn shell(line: &str, cwd: &Path, timeout: Duration) -> CommandSpec {
    let parent = [("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned())];
    CommandSpec {
        program: Program::Shell(line.to_owned()),
        cwd: cwd.to_owned(),
        env: child_env(parent, &[], []),
        timeout,
        kill_grace: Duration::from_millis(500),
        output_cap: 64 * 1024,
        isolation: Isolation::default(),
    }
}

/// A shell command that writes its own pid as the host sees it (`$!` and `$$` are the PID
/// namespace's) to `pidfile`, then becomes `sleep 300`: `/proc/self` is resolved by the host's
/// procfs, and `exec` keeps the pid.
fn host_pid_then_sleep(pidfile: &Path) -> String {
    format!(
        "read -r p _ < /proc/self/stat; echo $p > {}; exec sleep 300",
        pidfile.display()
    )
}

/// True while a process with this pid exists and is not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn read_pid(path: &Path) -> i32 {
    for _ in 0..100 {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no pid written to {}", path.display());
}

#[tokio::test]
async fn captures_exit_code_and_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    let out = executor()
        .run(shell(
            "echo out; echo err >&2; exit 7",
            dir.path(),
            Duration::from_secs(10),
        ))
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Exited { code: 7 });
    assert_eq!(out.stdout.text, "out\n");
    assert_eq!(out.stderr.text, "err\n");
    assert!(out.duration < Duration::from_secs(10));
}

#[tokio::test]
async fn the_child_sees_only_the_environment_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let parent = vec![
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ("GITHUB_TOKEN".to_owned(), "ghs_CANARYtoken123".to_owned()),
        ("OPENAI_API_KEY".to_owned(), "sk-CANARY".to_owned()),
    ];
    let mut spec = shell(
        "env; cat /proc/$PPID/environ | tr '\\0' '\\n'",
        dir.path(),
        Duration::from_secs(10),
    );
    spec.env = child_env(parent, &[], []);
    let out = executor().run(spec).await.unwrap();
    assert!(
        out.termination.success(),
        "{:?} {}",
        out.termination,
        out.stderr.text
    );
    assert!(out.stdout.text.contains("PATH=/usr/bin:/bin"));
    assert!(!out.stdout.text.contains("CANARY"), "{}", out.stdout.text);
}

#[tokio::test]
async fn stdin_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let out = executor()
        .run(shell("cat; echo done", dir.path(), Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Exited { code: 0 });
    assert_eq!(out.stdout.text, "done\n");
}

#[tokio::test]
async fn output_is_capped_with_a_marker_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let out = executor()
        .run(shell(
            "head -c 20000000 /dev/zero | tr '\\0' 'x'; echo; echo END",
            dir.path(),
            Duration::from_secs(30),
        ))
        .await
        .unwrap();
    assert!(out.stdout.truncated);
    assert_eq!(out.stdout.total_bytes, 20_000_005);
    assert!(out.stdout.text.len() < 64 * 1024 + 200);
    assert!(out.stdout.text.contains("bytes truncated"));
    assert!(out.stdout.text.ends_with("END\n"));
}

#[tokio::test]
async fn a_timeout_kills_the_whole_tree_including_double_forked_daemons() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon.pid");
    let line = format!(
        "(setsid sh -c '{}' &); sleep 300",
        host_pid_then_sleep(&pidfile)
    );
    let out = executor()
        .run(shell(&line, dir.path(), Duration::from_millis(800)))
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::TimedOut);
    assert!(out.duration < Duration::from_secs(10), "{:?}", out.duration);
    let daemon = read_pid(&pidfile);
    assert!(!alive(daemon), "daemon {daemon} survived the gate");
}

#[tokio::test]
async fn leftover_processes_are_killed_after_a_normal_exit() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("orphan.pid");
    let line = format!(
        "setsid sh -c '{}' > /dev/null 2>&1 & while [ ! -s {} ]; do sleep 0.05; done; exit 0",
        host_pid_then_sleep(&pidfile),
        pidfile.display()
    );
    let out = executor()
        .run(shell(&line, dir.path(), Duration::from_secs(20)))
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Exited { code: 0 });
    // In a PID namespace the kernel kills the leftovers with the command; otherwise the
    // supervisor finds and kills them, and counts them.
    if !meta_agent::exec::detect::user_namespaces_work() {
        assert!(out.descendants_killed >= 1, "{out:?}");
    }
    assert!(!alive(read_pid(&pidfile)));
}

#[tokio::test]
async fn a_missing_program_is_reported_not_crashed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = CommandSpec {
        program: Program::Argv(vec!["no-such-program-xyz".into(), "--flag".into()]),
        cwd: dir.path().to_owned(),
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        timeout: Duration::from_secs(5),
        kill_grace: Duration::from_millis(100),
        output_cap: 1024,
        isolation: Isolation::default(),
    };
    let out = executor().run(spec).await.unwrap();
    match out.termination {
        Termination::NotStarted { reason } => {
            assert!(reason.contains("no-such-program-xyz"), "{reason}")
        }
        other => panic!("expected NotStarted, got {other:?}"),
    }
}

#[tokio::test]
async fn argv_is_passed_without_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = shell("", dir.path(), Duration::from_secs(5));
    spec.program = Program::Argv(vec!["echo".into(), "$(id); `whoami` | && ;".into()]);
    let out = executor().run(spec).await.unwrap();
    assert_eq!(out.stdout.text, "$(id); `whoami` | && ;\n");
}

/// A process whose main thread exits while another thread runs shows as a zombie; it must not
/// survive its command to rewrite a file after the gates passed.
#[tokio::test]
async fn a_zombie_leader_with_a_live_thread_does_not_outlive_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("late-write");
    let script = format!(
        "import ctypes, threading, time\n\
         def late():\n    time.sleep(1.5)\n    open('{}', 'w').write('rewritten after the end')\n\
         threading.Thread(target=late).start()\n\
         ctypes.CDLL(None).pthread_exit(None)\n",
        marker.display()
    );
    std::fs::write(dir.path().join("survivor.py"), script).unwrap();
    let out = executor()
        .run(shell(
            "python3 survivor.py > /dev/null 2>&1 & sleep 0.5; exit 0",
            dir.path(),
            Duration::from_secs(20),
        ))
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Exited { code: 0 });
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !marker.exists(),
        "a thread of the command wrote after it ended"
    );
}

/// A descendant that keeps the command's stdout open must not make the bot wait for it.
#[tokio::test]
async fn a_descendant_holding_the_output_pipe_does_not_hold_the_bot() {
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = executor()
        .run(shell(
            "echo before; setsid sh -c 'sleep 120; echo held' & exit 0",
            dir.path(),
            Duration::from_secs(60),
        ))
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Exited { code: 0 });
    assert!(out.stdout.text.starts_with("before"), "{out:?}");
    assert!(!out.stdout.text.contains("held"), "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}
