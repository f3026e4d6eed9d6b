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
        "(setsid sh -c 'sleep 300 & echo $! > {}' &); sleep 300",
        pidfile.display()
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
        "setsid sleep 300 > /dev/null 2>&1 & echo $! > {}; exit 0",
        pidfile.display()
    );
    let out = executor()
        .run(shell(&line, dir.path(), Duration::from_secs(20)))
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Exited { code: 0 });
    assert!(out.descendants_killed >= 1, "{out:?}");
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
