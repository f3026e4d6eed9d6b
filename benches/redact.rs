//! The one outbound redactor's cost (target: at least 20 MB/s on a clean log, the common case:
//! outbound texts are comments, reports and traces, rarely more than a few MB).
//!
//! A redactor holding eight secrets of the shapes it meets (API keys, a token, a password) reads
//! 10 MB of CI output: clean, then with a secret every 500 lines in one of the forms it
//! recognises (plain, upper case, reversed, ROT13, spread with zero-width characters, hex,
//! base64, and gzip+base64), and one 4 KB model summary (the per-call latency). Every run checks
//! that each planted secret is gone, so the figure is for a redactor that works. Run:
//! `cargo bench --bench redact`.

use std::hint::black_box;
use std::io::Write as _;

use base64::Engine as _;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use meta_agent::redact::Redactor;

const LOG_BYTES: usize = 10 * 1024 * 1024;

/// Eight secrets the redactor holds, of the lengths and alphabets real ones have.
fn secrets() -> Vec<String> {
    vec![
        "sk-bench-4e7d0b9a61c2f38d".into(),
        "sk-ant-api03-bench-Zq8LmN2pR5tV".into(),
        "ghp_benchAbCdEfGhIjKlMnOpQrStUv012345".into(),
        "xoxb-2026-bench-1234567890".into(),
        "hunter2-correct-horse-battery".into(),
        "AKIABENCH1234567EXMP".into(),
        "glpat-bench-xYz987654321".into(),
        "npm_benchTokenValue00112233".into(),
    ]
}

/// One line of ordinary CI output; `i` varies names, numbers and durations.
fn line(i: usize) -> String {
    match i % 6 {
        0 => format!("test module_{}::tests::handles_case_{i} ... ok\n", i % 97),
        1 => format!(
            "tests/test_api.py::test_endpoint_{i} PASSED [ {:>2}%]\n",
            i % 100
        ),
        2 => format!("    ✓ renders item {i} ({} ms)\n", i % 40),
        3 => format!("--- PASS: TestHandler{i} (0.{:02}s)\n", i % 100),
        4 => format!(
            "2026-11-27T02:{:02}:{:02}Z INFO request {i} handled\n",
            i % 60,
            i % 60
        ),
        _ => format!(
            "ok  \texample.com/service/pkg{}\t0.{:03}s\n",
            i % 50,
            i % 1000
        ),
    }
}

fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            other => other,
        })
        .collect()
}

fn gzip_base64(text: &str) -> String {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(text.as_bytes()).expect("gzip in memory");
    let packed = encoder.finish().expect("gzip in memory");
    base64::engine::general_purpose::STANDARD.encode(packed)
}

/// `secret` in the `form`-th of the forms the redactor recognises.
fn encoded(secret: &str, form: usize) -> String {
    match form % 8 {
        0 => secret.to_owned(),
        1 => secret.to_uppercase(),
        2 => secret.chars().rev().collect(),
        3 => rot13(secret),
        4 => secret.chars().map(|c| format!("{c}\u{200b}")).collect(),
        5 => secret.bytes().map(|b| format!("{b:02x}")).collect(),
        6 => base64::engine::general_purpose::STANDARD.encode(secret),
        _ => gzip_base64(&format!("config dump: key={secret} region=eu\n")),
    }
}

/// About `bytes` of CI output; with `planted`, a secret line every 500 lines.
fn log(bytes: usize, planted: bool) -> String {
    let secrets = secrets();
    let mut out = String::with_capacity(bytes + 4096);
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&line(i));
        if planted && i % 500 == 499 {
            let n = i / 500;
            let secret = &secrets[n % secrets.len()];
            out.push_str(&format!("debug: token {}\n", encoded(secret, n)));
        }
        i += 1;
    }
    out
}

/// Panics when any planted secret survives in `redacted` (plain or upper case).
fn assert_clean(redacted: &str) {
    for secret in secrets() {
        assert!(
            !redacted.contains(&secret) && !redacted.contains(&secret.to_uppercase()),
            "{secret} survived"
        );
    }
}

fn redaction(c: &mut Criterion) {
    let redactor = Redactor::from_values(secrets());
    let clean = log(LOG_BYTES, false);
    let planted = log(LOG_BYTES, true);
    assert_clean(&redactor.redact_text(&planted));
    let changed = redactor.redact_text(&planted) != planted.as_str();
    assert!(changed, "the planted secrets are redacted");
    let mut group = c.benchmark_group("redact");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(clean.len() as u64));
    group.bench_function("clean_log_10MB", |b| {
        b.iter(|| redactor.redact_text(black_box(&clean)).len())
    });
    group.throughput(Throughput::Bytes(planted.len() as u64));
    group.bench_function("log_10MB_secret_every_500_lines", |b| {
        b.iter(|| redactor.redact_text(black_box(&planted)).len())
    });
    let summary = log(4096, true) + &encoded(&secrets()[0], 7);
    assert_clean(&redactor.redact_text(&summary));
    group.throughput(Throughput::Bytes(summary.len() as u64));
    group.bench_function("model_summary_4KB", |b| {
        b.iter(|| redactor.redact_text(black_box(&summary)).len())
    });
    group.finish();
}

criterion_group!(benches, redaction);
criterion_main!(benches);
