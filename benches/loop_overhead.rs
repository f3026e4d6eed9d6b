//! The loop's own overhead per iteration: everything but the LLM and the gate commands.
//!
//! A scratch git repository, a scripted builder (two edits), and a command runner that answers
//! instantly (the gate fails once, then passes): what is measured is planning, the tamper guard,
//! diffs, signature extraction, hindsight lookups, decisions, events, atomic state saves after
//! every transition and the final git commit. Target: under 50 ms per iteration.
//!
//! Run with `cargo bench --bench loop_overhead`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use meta_agent::config::{self, Config};
use meta_agent::engine::improve::HindsightView;
use meta_agent::engine::run::{Engine, StartOptions};
use meta_agent::engine::scripted::ScriptedBuilder;
use meta_agent::engine::state::SessionStore;
use meta_agent::exec::{
    Captured, CommandOutput, CommandRunner, CommandSpec, ExecError, Termination,
};
use meta_agent::git::{Git2Repository, Identity, Repository};
use meta_agent::protocol::event::Recorder;
use meta_agent::protocol::task::{Edit, ScriptStep, Task};

/// Answers every command at once: exit 1 for the first `failures` calls, then 0.
struct InstantRunner {
    calls: AtomicU32,
    failures: u32,
}

impl CommandRunner for InstantRunner {
    async fn run(&self, _spec: CommandSpec) -> Result<CommandOutput, ExecError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let code = if call < self.failures { 1 } else { 0 };
        let stderr = Captured {
            text: "error: check failed in src/lib.rs\n".into(),
            total_bytes: 34,
            truncated: false,
        };
        Ok(CommandOutput {
            termination: Termination::Exited { code },
            stdout: Captured::default(),
            stderr: if code == 0 {
                Captured::default()
            } else {
                stderr
            },
            duration: Duration::ZERO,
            descendants_killed: 0,
        })
    }
}

fn config() -> Config {
    let text = "version: 1\npreset: none\ngates:\n  - name: check\n    run: [check]\n";
    let raw = config::parse_raw(text, std::path::Path::new("bench.yml")).expect("config parses");
    config::resolve::resolve(config::resolve::ResolveInput {
        file: Some((std::path::Path::new("bench.yml"), &raw, text)),
        preset: None,
        preset_reason: "bench".into(),
    })
    .expect("config resolves")
}

fn scratch_repo() -> (tempfile::TempDir, Git2Repository) {
    let dir = tempfile::tempdir().expect("tempdir");
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .current_dir(dir.path())
            .args([
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .status()
            .expect("git");
        assert!(status.success());
    };
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    let body: String = (0..200)
        .map(|i| format!("pub fn f{i}() -> u32 {{ {i} }}\n"))
        .collect();
    std::fs::write(dir.path().join("src/lib.rs"), body).expect("write");
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "init"]);
    let repo = Git2Repository::open(dir.path()).expect("open");
    (dir, repo)
}

fn task() -> Task {
    let step = |n: u32| ScriptStep {
        summary: format!("edit {n}"),
        changes: vec![Edit::Replace {
            path: "src/lib.rs".into(),
            search: format!("pub fn f{n}() -> u32 {{ {n} }}"),
            replace: format!("pub fn f{n}() -> u32 {{ {n} + 1 }}"),
        }],
    };
    let mut task = Task::from_text("Bench the loop").expect("task");
    task.script = vec![step(1), step(2)];
    task
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = config();
    let catalog_dir = tempfile::tempdir().expect("tempdir");
    let hindsight = HindsightView::load(
        catalog_dir.path(),
        std::path::Path::new("store"),
        true,
        &|_| None,
    )
    .expect("hindsight");
    let reports = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("loop");
    group.sample_size(20);
    group.bench_function("two_iterations_to_commit", |b| {
        b.iter_batched(
            scratch_repo,
            |(dir, repo)| {
                let runner = InstantRunner {
                    calls: AtomicU32::new(0),
                    failures: 1,
                };
                let builder = ScriptedBuilder::new(task().script);
                let policy = meta_agent::policy::Policy::from_config(&config, dir.path());
                let sessions = SessionStore::for_git_dir(&repo.git_dir());
                let events = Recorder::default();
                let pauses = meta_agent::protocol::pause::PauseGate::default();
                let engine = Engine {
                    config: &config,
                    policy: &policy,
                    runner: &runner,
                    repo: &repo,
                    builder: &builder,
                    events: &events,
                    sessions: &sessions,
                    hindsight: &hindsight,
                    parent_env: &[],
                    report_root: reports.path(),
                    identity: Identity::default(),
                    deadline: Default::default(),
                    interrupt: Default::default(),
                    pauses: &pauses,
                };
                let options = StartOptions {
                    session: "bench".into(),
                    dry_run: false,
                    max_iterations: 3,
                    snapshot: None,
                };
                let report = runtime
                    .block_on(engine.start(task(), options))
                    .expect("run");
                assert_eq!(report.state.iterations_run(), 1);
                assert!(report.commit.is_some());
                drop(dir);
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
