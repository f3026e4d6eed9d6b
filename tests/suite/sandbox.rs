//! Isolation of every child process, through the real binary as supervisor: writes confined to
//! the worktree and temp (`.git` read-only), network cut, resource limits, `no_new_privs`, a fork
//! bomb bounded with no survivor, and meta-agent's own environ unreadable. A test whose feature
//! is missing here says so, checks that `detect()` agrees, and stops; it never passes silently.

use std::path::Path;
use std::time::Duration;

use meta_agent::exec::detect::{Capabilities, detect};
use meta_agent::exec::env::child_env;
use meta_agent::exec::sandbox::{Isolation, Limits, NetworkPolicy};
use meta_agent::exec::{CommandOutput, CommandRunner, CommandSpec, Executor, Program};

use crate::common::meta_agent;
use crate::common::procs::unique_mark;

/// Directories outside the system temp dir, so that only the workdir makes them writable.
fn spec(line: &str, cwd: &Path, isolation: Isolation) -> CommandSpec {
    let parent = [("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned())];
    CommandSpec {
        program: Program::Argv(vec!["bash".into(), "-c".into(), line.into()]),
        cwd: cwd.to_owned(),
        env: child_env(parent, &[], []),
        timeout: Duration::from_secs(20),
        kill_grace: Duration::from_millis(300),
        output_cap: 256 * 1024,
        isolation,
    }
}

async fn run(spec: CommandSpec) -> CommandOutput {
    Executor::new(env!("CARGO_BIN_EXE_meta-agent").into())
        .run(spec)
        .await
        .unwrap()
}

/// False (after saying why) when the machine lacks what a test needs.
fn available(feature: &str, present: bool, caps: &Capabilities) -> bool {
    if !present {
        eprintln!(
            "SKIPPED: {feature} is not available here ({})",
            caps.describe()
        );
    }
    present
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn detection_is_consistent_with_this_machine() {
    let caps = detect();
    let line = caps.describe();
    eprintln!("{line}");
    assert_eq!(caps, detect(), "detection is stable");
    assert_eq!(caps.landlock_abi.is_some(), line.contains("Landlock ABI"));
    assert_eq!(caps.user_namespaces, !line.contains("no user namespaces"));
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    assert_eq!(caps.nproc_enforced, !root);
}

#[tokio::test]
async fn writes_land_in_the_workdir_and_tmp_but_never_in_a_decoy() {
    let caps = detect();
    if !available("Landlock", caps.landlock_abi.is_some(), &caps) {
        return;
    }
    let (work, decoy) = (crate::common::outside_tmp(), crate::common::outside_tmp());
    std::fs::write(decoy.path().join("keep"), "original").unwrap();
    let line = "echo pwned > \"$DECOY/new\"; echo pwned >> \"$DECOY/keep\"; \
                rm -f \"$DECOY/keep\"; mkdir \"$DECOY/dir\"; ln -s /etc \"$DECOY/link\"; \
                echo ok > inside.txt && mkdir sub && echo ok > sub/f && echo work-ok; \
                t=$(mktemp) && echo x > \"$t\" && rm \"$t\" && echo tmp-ok";
    let mut spec = spec(line, work.path(), Isolation::default());
    spec.env
        .insert("DECOY".into(), decoy.path().display().to_string());
    let out = run(spec).await;
    assert!(out.stdout.text.contains("work-ok"), "{out:?}");
    assert!(out.stdout.text.contains("tmp-ok"), "{out:?}");
    assert!(out.stderr.text.contains("Permission denied"), "{out:?}");
    assert_eq!(entries(decoy.path()), ["keep"]);
    let kept = std::fs::read_to_string(decoy.path().join("keep")).unwrap();
    assert_eq!(kept, "original");
    assert!(work.path().join("sub/f").exists());
}

#[tokio::test]
async fn git_inside_the_workdir_is_read_only() {
    let caps = detect();
    if !available("user namespaces", caps.user_namespaces, &caps) {
        return;
    }
    let work = crate::common::outside_tmp();
    std::fs::create_dir_all(work.path().join(".git/hooks")).unwrap();
    std::fs::write(work.path().join(".git/config"), "[core]\n").unwrap();
    let line = "echo evil >> .git/config; echo '#!/bin/sh' > .git/hooks/pre-commit; \
                rm -f .git/config; mkdir .git/x; echo ok > tracked.txt && echo work-ok";
    let out = run(spec(line, work.path(), Isolation::default())).await;
    assert!(out.stdout.text.contains("work-ok"), "{out:?}");
    assert!(out.stderr.text.contains("Read-only file system"), "{out:?}");
    let config = std::fs::read_to_string(work.path().join(".git/config")).unwrap();
    assert_eq!(config, "[core]\n");
    assert_eq!(entries(&work.path().join(".git")), ["config", "hooks"]);
    assert!(entries(&work.path().join(".git/hooks")).is_empty());
}

#[tokio::test]
async fn network_off_cuts_even_loopback_while_network_on_connects() {
    let caps = detect();
    if !available("user namespaces", caps.user_namespaces, &caps) {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let work = crate::common::outside_tmp();
    let line = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let on = run(spec(&line, work.path(), Isolation::default())).await;
    assert!(on.stdout.text.contains("connected"), "{on:?}");
    let off = Isolation {
        network: NetworkPolicy::Off,
        ..Isolation::strict()
    };
    let cut = run(spec(&line, work.path(), off)).await;
    assert!(!cut.stdout.text.contains("connected"), "{cut:?}");
    assert!(!cut.termination.success(), "{cut:?}");
    assert!(cut.stderr.text.contains("/dev/tcp"), "{cut:?}");
}

#[tokio::test]
async fn the_file_size_limit_stops_a_huge_file() {
    let work = crate::common::outside_tmp();
    let isolation = Isolation {
        limits: Limits {
            file_size: Some(1 << 20),
            ..Limits::default()
        },
        ..Isolation::default()
    };
    let line = "head -c 5000000 /dev/zero > big; echo rc=$?";
    let out = run(spec(line, work.path(), isolation)).await;
    assert!(!out.stdout.text.contains("rc=0"), "{out:?}");
    let size = std::fs::metadata(work.path().join("big")).unwrap().len();
    assert!(size <= 1 << 20, "{size}");
}

#[tokio::test]
async fn limits_and_no_new_privs_are_visible_in_the_child() {
    let work = crate::common::outside_tmp();
    let line = "grep NoNewPrivs /proc/self/status; cat /proc/self/limits";
    let out = run(spec(line, work.path(), Isolation::default())).await;
    let text = &out.stdout.text;
    assert!(text.contains("NoNewPrivs:\t1"), "{text}");
    let limit = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert!(limit("Max processes").contains(&"4096"), "{text}");
    assert!(limit("Max file size").contains(&"1073741824"), "{text}");
    assert!(limit("Max data size").contains(&"8589934592"), "{text}");
    assert!(
        limit("Max address space").contains(&"unlimited"),
        "reserved address space is not limited: {text}"
    );
    assert!(limit("Max cpu time").contains(&"21"), "{text}");
    assert!(limit("Max core file size").contains(&"0"), "{text}");
}

/// The ids of the processes whose command line or environment carries `mark`.
fn processes_with(mark: &str) -> Vec<i32> {
    crate::common::procs::processes_with(mark)
        .iter()
        .filter_map(|found| found.strip_prefix("pid ")?.split(':').next()?.parse().ok())
        .collect()
}

#[tokio::test]
async fn a_fork_bomb_is_bounded_and_nothing_survives() {
    let caps = detect();
    let work = crate::common::outside_tmp();
    let name = format!("{}.sh", unique_mark("bomb-sandbox-test"));
    let script = work.path().join(&name);
    let mut isolation = Isolation::default();
    if caps.nproc_enforced {
        std::fs::write(&script, "b() { echo >> forks; b | b & }; b\nsleep 300\n").unwrap();
        isolation.limits.processes = Some(uid_tasks() + 256);
    } else {
        // Root: the kernel ignores RLIMIT_NPROC, so a real bomb would hurt the machine. A bomb
        // bounded by depth (about 250 processes) still proves that nothing survives.
        eprintln!("SKIPPED the unbounded bomb: {}", caps.describe());
        let depth = "echo >> forks; d=${1:-7}; \
                     if [ $d -gt 0 ]; then sh \"$0\" $((d-1)) & sh \"$0\" $((d-1)) & fi\n";
        std::fs::write(&script, format!("{depth}sleep 300\n")).unwrap();
    }
    let mut spec = spec(&format!("sh {name}"), work.path(), isolation);
    spec.timeout = Duration::from_secs(3);
    let out = run(spec).await;
    assert!(out.duration < Duration::from_secs(30), "{out:?}");
    let forks = std::fs::read_to_string(work.path().join("forks")).unwrap();
    assert!(forks.len() > 50, "the bomb did not go off: {out:?}");
    let survivors = processes_with(&name);
    assert!(survivors.is_empty(), "survivors {survivors:?}");
}

/// Tasks (threads included: RLIMIT_NPROC counts them) of this user, system-wide.
fn uid_tasks() -> u64 {
    let me = std::fs::metadata("/proc/self").unwrap();
    let uid = std::os::unix::fs::MetadataExt::uid(&me);
    let count: usize = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter(|e| {
            e.metadata()
                .is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == uid)
        })
        .map(|e| std::fs::read_dir(e.path().join("task")).map_or(0, Iterator::count))
        .sum();
    u64::try_from(count).unwrap()
}

#[test]
fn meta_agents_own_environ_is_unreadable_to_its_gates() {
    let repo = tempfile::tempdir().unwrap();
    // From the host's view of the process tree ($PPID is 0 inside the command's PID namespace).
    let walk = r#"read -r me _ < /proc/self/stat; p=$(sed 's/.*) //' /proc/$me/stat | cut -d' ' -f2)
      while [ "$p" -gt 1 ]; do
      if cat /proc/$p/environ > /dev/null 2>&1; then r=yes; else r=no; fi
      echo "ancestor=$(cat /proc/$p/comm):$r"; cat /proc/$p/environ 2>/dev/null | tr '\0' '\n'
      p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2); done; exit 1"#;
    let config = format!(
        "version: 1\npreset: none\ngates:\n  - name: walk\n    run: |\n{}\n",
        walk.lines()
            .map(|l| format!("      {}", l.trim()))
            .collect::<Vec<_>>()
            .join("\n")
    );
    std::fs::write(repo.path().join(".meta-agent.yml"), config).unwrap();
    let out = meta_agent()
        .arg("--repo")
        .arg(repo.path())
        .args(["gates", "--json"])
        .env("META_AGENT_CANARY", "CANARY_parent_secret_42")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    // The PID namespace's relay (where there is one), the supervisor, then meta-agent itself;
    // the walk goes on through the test's ancestors. Landlock (ptrace scoping) and meta-agent's
    // non-dumpable mark each block the read.
    let unreadable = stdout.matches("ancestor=meta-agent:no").count();
    let relay = usize::from(meta_agent::exec::detect::user_namespaces_work());
    assert_eq!(unreadable, 2 + relay, "{stdout}");
    assert!(!stdout.contains(":yes"), "{stdout}");
    assert!(!stdout.contains("CANARY"), "{stdout}");
}

/// Runs the supervisor directly as `nobody` (we are root) in `dir`, returning its output and the
/// status it wrote to its inherited pipe.
fn supervise_as_nobody(dir: &Path, flags: &[&str], line: &str) -> (String, String) {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let (status_read, status_write) = nix::unistd::pipe().unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_meta-agent"))
        .args(["__supervise", "--timeout-ms", "3000", "--grace-ms", "200"])
        .args(["--status-fd", &status_write.as_raw_fd().to_string()])
        .args(flags)
        .args(["--", "bash", "-c", line])
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    drop(status_write);
    let mut status = String::new();
    std::fs::File::from(status_read)
        .read_to_string(&mut status)
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    (text.into_owned(), status)
}

#[test]
fn an_unprivileged_user_gets_the_same_isolation() {
    let caps = detect();
    let setpriv = std::path::Path::new("/usr/bin/setpriv").exists();
    if caps.nproc_enforced || !setpriv {
        eprintln!(
            "SKIPPED: needs root and setpriv to switch to nobody; the other tests run unprivileged here"
        );
        return;
    }
    let work = crate::common::outside_tmp();
    std::fs::create_dir(work.path().join(".git")).unwrap();
    let bomb = format!("{}.sh", unique_mark("bomb"));
    std::fs::write(work.path().join(&bomb), "b() { b | b & }; b\nsleep 300\n").unwrap();
    for path in [work.path(), &work.path().join(".git")] {
        std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let line = format!(
        "grep NoNewPrivs /proc/self/status; touch .git/planted; touch ../escaped; \
         exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected; sh {bomb}"
    );
    let flags = [
        "--confine-writes",
        "--no-network",
        "--require-isolation",
        "--rlimit-nproc",
        "300",
    ];
    let (text, status) = supervise_as_nobody(work.path(), &flags, &line);
    assert!(status.contains("\"spawn_error\":null"), "{status}");
    assert!(status.contains("\"timed_out\":true"), "{status}");
    assert!(text.contains("NoNewPrivs:\t1"), "{text}");
    assert!(
        text.contains("Cannot fork"),
        "the process limit did not bind: {text}"
    );
    assert!(!text.contains("connected"), "{text}");
    assert_eq!(entries(&work.path().join(".git")), Vec::<String>::new());
    assert!(!work.path().parent().unwrap().join("escaped").exists());
    assert!(
        processes_with(&bomb)
            .iter()
            .all(|pid| !owned_by_nobody(*pid))
    );
}

fn owned_by_nobody(pid: i32) -> bool {
    std::fs::metadata(format!("/proc/{pid}"))
        .is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 65534)
}

#[tokio::test]
async fn hidden_files_and_directories_read_as_empty() {
    let caps = detect();
    if !available("user namespaces", caps.user_namespaces, &caps) {
        return;
    }
    let (work, secrets) = (crate::common::outside_tmp(), crate::common::outside_tmp());
    let token = secrets.path().join("token");
    std::fs::write(&token, "CANARY_token").unwrap();
    std::fs::create_dir(secrets.path().join("keys")).unwrap();
    std::fs::write(secrets.path().join("keys/id"), "CANARY_key").unwrap();
    let isolation = Isolation {
        hide: vec![token.clone(), secrets.path().join("keys")],
        ..Isolation::default()
    };
    let line =
        "cat \"$S/token\"; ls -A \"$S/keys\"; cat \"$S/keys/id\"; echo x > \"$S/token\"; echo done";
    let mut spec = spec(line, work.path(), isolation);
    spec.env
        .insert("S".into(), secrets.path().display().to_string());
    let out = run(spec).await;
    assert!(out.stdout.text.contains("done"), "{out:?}");
    assert!(!out.stdout.text.contains("CANARY"), "{out:?}");
    assert!(!out.stdout.text.contains("id"), "{out:?}");
    assert_eq!(std::fs::read_to_string(&token).unwrap(), "CANARY_token");
}

/// The default memory limit stops a runaway allocation: 9 GiB, more than the 8 GiB a process
/// may allocate but no more than the kernel's overcommit lets this machine map (checked first,
/// outside the sandbox, so the test proves the limit and not the machine). `bytes(n)` is zeroed
/// by `calloc`, so the check maps the memory without touching it.
#[tokio::test]
async fn the_memory_limit_stops_a_huge_allocation() {
    let allocate = "python3 -c 'x = bytes(9 << 30); print(\"allocated\")'; echo rc=$?";
    let outside = std::process::Command::new("bash")
        .args(["-c", allocate])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&outside.stdout).contains("allocated"),
        "the machine itself refuses 9 GiB (it needs that much memory and swap), so this \
         proves nothing: {outside:?}"
    );
    let work = crate::common::outside_tmp();
    let out = run(spec(allocate, work.path(), Isolation::default())).await;
    assert!(!out.stdout.text.contains("allocated"), "{out:?}");
    assert!(out.stderr.text.contains("MemoryError"), "{out:?}");
    let smaller = Isolation {
        limits: Limits {
            memory: Some(512 << 20),
            ..Limits::default()
        },
        ..Isolation::default()
    };
    let line = "python3 -c 'x = bytes(1 << 30); print(\"allocated\")'";
    let out = run(spec(line, work.path(), smaller)).await;
    assert!(out.stderr.text.contains("MemoryError"), "{out:?}");
}
