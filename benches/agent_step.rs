//! The agent harness's own costs, excluding the LLM's latency:
//!
//! - `agent/step`: one agent step (a tool call dispatched, its result appended, the next request
//!   assembled) with a provider that answers instantly from memory. Target: under 5 ms a step.
//! - `agent/first_request`: from spawning `meta-agent run` to the first LLM request arriving at a
//!   loopback server (configuration, detection, hindsight load, prompt assembly). Target: under
//!   100 ms.
//!
//! - `agent/context_24k`: assembling a 24k-token opening (tokenizer counts and trims of about
//!   60k tokens of task, failures, file excerpts and history) with the tokenizer table loaded.
//! - `agent/tokenizer_table`: building the cl100k table, paid once per process and only when an
//!   opening is too large to fit by its byte count alone.
//! - `agent/code_under_test`: the relevant code of an opening on this repository's own sources
//!   (about 60k lines of Rust): a failing unit test of `crates/agent/src/relevant.rs` found by name and
//!   its calls resolved with tree-sitter, three calls deep, then excerpted.
//!
//! Run with `cargo bench --bench agent_step`.

use std::io::Read;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use meta_agent::agent::prompt::{Opening, task_message};
use meta_agent::agent::relevant::FileExcerpt;
use meta_agent::agent::tokens::TokenCounter;
use meta_agent::agent::{AgentBuilder, AgentParts, AgentSettings, CommandSettings};
use meta_agent::exec::Executor;
use meta_agent::llm::{
    BudgetCaps, ChatRequest, Completion, LlmError, Provider, StopReason, ToolCall, Usage,
};
use meta_agent::protocol::builder::{ActRequest, Builder, FailureContext, FailureDigest};
use meta_agent::protocol::records::Plan;
use meta_agent::protocol::task::Task;

/// Answers `steps` tool calls reading a file, then `finish`, instantly.
struct InstantModel {
    left: Mutex<u32>,
}

impl Provider for InstantModel {
    async fn chat(&self, _request: &ChatRequest) -> Result<Completion, LlmError> {
        let mut left = self.left.lock().expect("lock");
        let call = if *left == 0 {
            ToolCall {
                id: "f".into(),
                name: "finish".into(),
                arguments: serde_json::json!({"summary": "done"}),
            }
        } else {
            *left -= 1;
            ToolCall {
                id: format!("c{left}"),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "src/lib.rs"}),
            }
        };
        Ok(Completion {
            text: String::new(),
            tool_calls: vec![call],
            usage: Usage {
                input_tokens: 100,
                output_tokens: 10,
            },
            cost_usd: 0.0,
            stop_reason: StopReason::ToolUse,
            cut_call: None,
        })
    }

    fn name(&self) -> &str {
        "instant"
    }
}

const STEPS: u32 = 20;

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    let body: String = (0..300)
        .map(|i| format!("pub fn f{i}() -> u32 {{ {i} }}\n"))
        .collect();
    std::fs::write(dir.path().join("src/lib.rs"), body).expect("write");
    dir
}

fn settings() -> AgentSettings {
    AgentSettings {
        model: "bench".into(),
        fast_model: "bench-fast".into(),
        context_tokens: 24_000,
        reflect: false,
        explore_min_files: 400,
        max_output_tokens: 1024,
        temperature: None,
        stream: false,
        command: CommandSettings::default(),
        policy: std::sync::Arc::new(meta_agent::policy::Policy::default()),
        instructions: std::sync::Arc::new(meta_agent::agent::instructions::RepoInstructions::none()),
    }
}

fn step(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = repo();
    let task = Task::from_text("Read the code").expect("task");
    let mut group = c.benchmark_group("agent");
    group.bench_function("twenty_steps", |b| {
        b.iter_batched(
            || {
                AgentBuilder::new(AgentParts {
                    provider: InstantModel {
                        left: Mutex::new(STEPS),
                    },
                    caps: BudgetCaps::default(),
                    runner: Executor::new(env!("CARGO_BIN_EXE_meta-agent").into()),
                    parent_env: Vec::new(),
                    settings: settings(),
                })
            },
            |agent| {
                let request = ActRequest {
                    task: &task,
                    plan: &Plan::Build,
                    iteration: 0,
                    call_index: 0,
                    repo_root: dir.path(),
                    context: FailureContext::default(),
                    max_steps: STEPS + 5,
                    progress: meta_agent::protocol::builder::Progress::nowhere(),
                    approved_plan: None,
                };
                let report = runtime.block_on(agent.act(request)).expect("act");
                assert_eq!(report.summary, "done");
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

/// A scratch git repository configured to talk to `base_url`.
fn configured_repo(base_url: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "version: 1\npreset: none\nllm:\n  provider: openai\n  base_url: {base_url}\n  model: bench\ngates:\n  - name: ok\n    run: \"true\"\n"
    );
    std::fs::write(dir.path().join(".meta-agent.yml"), config).expect("write");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
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
            .expect("git")
            .success();
        assert!(ok);
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "init"]);
    dir
}

fn first_request(c: &mut Criterion) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base_url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let mut group = c.benchmark_group("agent");
    group.sample_size(10);
    group.bench_function("first_request", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let repo = configured_repo(&base_url);
                let started = Instant::now();
                let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_meta-agent"))
                    .arg("--repo")
                    .arg(repo.path())
                    .args(["run", "--text", "Make the gates pass", "--dry-run"])
                    .env("OPENAI_API_KEY", "sk-bench")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn");
                let (mut stream, _) = listener.accept().expect("accept");
                let mut first_byte = [0u8; 1];
                stream.read_exact(&mut first_byte).expect("request");
                total += started.elapsed();
                drop(stream);
                let _ = child.kill();
                let _ = child.wait();
            }
            total
        });
    });
    group.finish();
}

/// Sections worth about 60k tokens, to be fitted into 24k.
fn big_request_parts() -> (Task, FailureContext, Vec<FileExcerpt>) {
    let mut task = Task::from_text("Rework the report module").expect("task");
    task.requirements = "The report must group failures by signature and gate. ".repeat(600);
    let context = FailureContext {
        failures: (0..40)
            .map(|n| {
                FailureDigest::test(
                    &format!("tests/test_report.py::test_{n}"),
                    Some(&format!("tests/test_report.py:{}", n * 3 + 1)),
                    &format!("assert {n} == {}", n + 1),
                )
            })
            .collect(),
        attempts: (0..300)
            .map(|n| {
                format!(
                    "iteration {}: edit_file src/report.py -> ok ({n} ms)",
                    n / 30
                )
            })
            .collect(),
        output: "E   AssertionError: values differ\n".repeat(400),
        guidance: vec!["Keep the public API stable.".into()],
        ..FailureContext::default()
    };
    let files = (0..6)
        .map(|n| FileExcerpt {
            path: format!("src/module_{n}.py"),
            reason: "stack trace, line 40".into(),
            text: (1..=400)
                .map(|line| {
                    format!("{line:>5}\tdef function_{line}(value): return value * {line}\n")
                })
                .collect(),
        })
        .collect();
    (task, context, files)
}

fn context(c: &mut Criterion) {
    let (task, failure_context, files) = big_request_parts();
    let counter = TokenCounter::for_model("gpt-4.1");
    counter.count("warm the table");
    let request = ActRequest {
        task: &task,
        plan: &Plan::Build,
        iteration: 1,
        call_index: 1,
        repo_root: std::path::Path::new("/nonexistent"),
        context: failure_context,
        max_steps: 15,
        progress: meta_agent::protocol::builder::Progress::nowhere(),
        approved_plan: None,
    };
    let opening = Opening {
        files: &files,
        codebase: None,
        instructions: "",
        budget: 24_000,
        counter: &counter,
    };
    let assembled = task_message(&request, &opening);
    assert!(counter.count(&assembled.text) <= 24_000 && !assembled.omitted.is_empty());
    let mut group = c.benchmark_group("agent");
    group.bench_function("context_24k", |b| {
        b.iter(|| task_message(&request, &opening));
    });
    group.sample_size(10);
    group.bench_function("tokenizer_table", |b| {
        b.iter(|| tiktoken_rs::cl100k_base().expect("cl100k"));
    });
    group.finish();
}

fn code_under_test(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let task = Task::from_text("The tests fail; make them pass").expect("task");
    let test = "meta_agent_agent::relevant::tests::the_code_under_test_comes_first_then_frames_then_the_test";
    let context = FailureContext {
        failures: vec![FailureDigest::test(
            test,
            Some("crates/agent/src/relevant.rs"),
            "assertion `left == right` failed",
        )],
        ..FailureContext::default()
    };
    let policy = meta_agent::policy::Policy::default();
    let found = meta_agent::agent::relevant::find(root, &task, &context, &policy);
    assert!(
        found.iter().any(|f| f.reason.contains("called by")),
        "the code under test is found: {found:?}"
    );
    let mut group = c.benchmark_group("agent");
    group.sample_size(20);
    group.bench_function("code_under_test", |b| {
        b.iter(|| meta_agent::agent::relevant::find(root, &task, &context, &policy));
    });
    group.finish();
}

criterion_group!(benches, step, first_request, context, code_under_test);
criterion_main!(benches);
