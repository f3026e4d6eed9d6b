//! Signature extraction throughput on a large log (target: at least 100 MB/s).
//!
//! Generates ~100 MB of realistic mixed CI output: mostly passing lines from several runners
//! (cargo test, pytest, jest, go test, build progress, timestamped application logs, some that
//! mention "error" harmlessly), with real failures copied from the committed fixtures interleaved
//! every few thousand lines; and a failure-heavy 10 MB log (a failure block every 20 lines) to show
//! the cost stays linear. Run: `cargo bench --bench signatures`.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use meta_agent::hindsight::signature::{ExtractOptions, extract_log, normalize};

const TARGET_BYTES: usize = 100 * 1024 * 1024;

/// Real failure output from the fixtures (run1 of each), inserted between passing lines.
fn failures() -> Vec<String> {
    let logs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/hindsight/logs");
    let names = [
        "rust/cargo-test.run1.txt",
        "rust/rustc-build.run1.txt",
        "python/pytest.run1.txt",
        "python/traceback.run1.txt",
        "node/jest.run1.txt",
        "node/mocha.run1.txt",
        "node/tsc.run1.txt",
        "node/eslint.run1.txt",
        "go/test.run1.txt",
        "go/panic.run1.txt",
    ];
    names
        .iter()
        .filter_map(|name| std::fs::read_to_string(logs.join(name)).ok())
        .collect()
}

/// One passing line; `i` varies names, numbers and durations.
fn passing_line(i: usize) -> String {
    match i % 8 {
        0 => format!("test module_{}::tests::handles_case_{i} ... ok\n", i % 97),
        1 => format!(
            "tests/test_api.py::test_endpoint_{i} PASSED                       [ {:>2}%]\n",
            i % 100
        ),
        2 => format!("    ✓ renders item {i} ({} ms)\n", i % 40),
        3 => format!("--- PASS: TestHandler{i} (0.{:02}s)\n", i % 100),
        4 => format!(
            "   Compiling dependency-{} v0.{}.{}\n",
            i % 300,
            i % 20,
            i % 9
        ),
        5 => format!(
            "2026-11-22T02:{:02}:{:02}.{:03}Z INFO request {i} handled in {}ms\n",
            i % 60,
            i % 60,
            i % 1000,
            i % 90
        ),
        6 => format!("test error_handling::recovers_from_case_{i} ... ok\n"),
        _ => format!(
            "ok  \texample.com/service/pkg{}\t0.{:03}s\n",
            i % 50,
            i % 1000
        ),
    }
}

/// `bytes` of passing lines with a real failure after every `every` lines.
fn mixed_log(bytes: usize, every: usize) -> String {
    let failures = failures();
    let mut log = String::with_capacity(bytes + 64 * 1024);
    let mut i = 0;
    while log.len() < bytes {
        log.push_str(&passing_line(i));
        if i % every == every - 1 && !failures.is_empty() {
            log.push_str(&failures[(i / every) % failures.len()]);
        }
        i += 1;
    }
    log
}

fn extraction(c: &mut Criterion) {
    let log = mixed_log(TARGET_BYTES, 5000);
    let opts = ExtractOptions::default();
    let found = extract_log(&log, Path::new("bench.log"), &opts).len();
    assert!(
        found >= 20,
        "the benchmark log should hold many distinct failures, found {found}"
    );
    let mut group = c.benchmark_group("signatures");
    group.throughput(Throughput::Bytes(log.len() as u64));
    group.sample_size(10);
    group.bench_function("extract_log_100MB", |b| {
        b.iter(|| extract_log(black_box(&log), Path::new("bench.log"), &opts))
    });
    // The worst case: a failure block after every 20 passing lines (most bytes are failures).
    let heavy = mixed_log(TARGET_BYTES / 10, 20);
    group.throughput(Throughput::Bytes(heavy.len() as u64));
    group.bench_function("extract_log_10MB_failure_heavy", |b| {
        b.iter(|| extract_log(black_box(&heavy), Path::new("bench.log"), &opts))
    });
    group.finish();
}

fn normalization(c: &mut Criterion) {
    let message = "thread 'tests::x' (4711) panicked at /tmp/tmp.AbCd/proj/src/lib.rs:16:9: request \
                   failed after 3.2ms (pid 1234, seed=99, at 0x7ffd5a3c) 2026-11-22T02:13:24Z";
    let mut group = c.benchmark_group("signatures");
    group.throughput(Throughput::Bytes(message.len() as u64));
    group.bench_function("normalize_message", |b| {
        b.iter(|| normalize(black_box(message), None))
    });
    group.finish();
}

criterion_group!(benches, extraction, normalization);
criterion_main!(benches);
