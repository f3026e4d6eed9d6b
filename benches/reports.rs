//! Benchmarks of the report readers: JUnit parse throughput on a generated ~100 MB report with a
//! realistic mix, and peak memory of a fresh process reading reports with 1x and 10x the passing
//! tests (it must not grow with them).
//!
//! Run: `cargo bench --bench reports`. The generated reports live in a temporary directory and are
//! removed at the end; nothing here touches the repository.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{Criterion, Throughput};
use meta_agent::report::{Limits, parse_junit_file};

/// The argument under which the bench re-runs itself to measure one read in a fresh process.
const PEAK_RSS_ARG: &str = "--junit-peak-rss";

/// What a generated report holds.
struct Mix {
    suites: usize,
    passing_per_suite: usize,
    /// Every `failure_every`-th test case of a suite fails (with a long CDATA stack trace).
    failure_every: usize,
    /// Every `output_every`-th passing test case has captured `<system-out>`.
    output_every: usize,
}

/// The ~100 MB realistic report: many suites, mostly passing, some output, ~3% failures.
const REALISTIC: Mix = Mix {
    suites: 2_000,
    passing_per_suite: 200,
    failure_every: 33,
    output_every: 10,
};

fn stack_trace(suite: usize, case: usize) -> String {
    let mut trace = format!("java.lang.AssertionError: expected <{case}> but was <{suite}>\n");
    for frame in 0..40 {
        let _ = writeln!(
            trace,
            "\tat com.example.module{suite}.Service{frame}.call(Service{frame}.java:{})",
            100 + frame
        );
    }
    trace
}

fn write_case(out: &mut impl Write, mix: &Mix, suite: usize, case: usize) -> std::io::Result<()> {
    write!(
        out,
        "    <testcase classname=\"com.example.module{suite}.FeatureTest\" name=\"test_behaviour_{case}\" \
         time=\"0.{case:03}\" file=\"src/test/module{suite}/FeatureTest.java\" line=\"{case}\""
    )?;
    if case % mix.failure_every == mix.failure_every - 1 {
        let trace = stack_trace(suite, case);
        return writeln!(
            out,
            ">\n      <failure message=\"expected &lt;{case}&gt; but was &lt;{suite}&gt;\" \
             type=\"java.lang.AssertionError\"><![CDATA[{trace}]]></failure>\n      \
             <system-out><![CDATA[setting up fixture {case}\n]]></system-out>\n    </testcase>"
        );
    }
    if case.is_multiple_of(mix.output_every) {
        return writeln!(
            out,
            ">\n      <system-out>INFO starting case {case}\nINFO connecting to db &amp; cache\n\
             INFO done in 12 ms\n</system-out>\n    </testcase>"
        );
    }
    writeln!(out, "/>")
}

/// Writes a report with `mix` to `path`; returns its size in bytes.
fn generate(path: &Path, mix: &Mix) -> u64 {
    let file = std::fs::File::create(path).expect("create the generated report");
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let total = mix.suites * mix.passing_per_suite;
    let header = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"bench\" tests=\"{total}\">\n"
    );
    out.write_all(header.as_bytes()).expect("write");
    for suite in 0..mix.suites {
        writeln!(
            out,
            "  <testsuite name=\"com.example.module{suite}\" tests=\"{}\">",
            mix.passing_per_suite
        )
        .expect("write");
        for case in 0..mix.passing_per_suite {
            write_case(&mut out, mix, suite, case).expect("write");
        }
        writeln!(out, "  </testsuite>").expect("write");
    }
    writeln!(out, "</testsuites>").expect("write");
    out.flush().expect("flush");
    std::fs::metadata(path).expect("stat").len()
}

fn bench_junit(c: &mut Criterion, report: &Path, size: u64) {
    let mut group = c.benchmark_group("junit");
    group.throughput(Throughput::Bytes(size));
    group.sample_size(10);
    group.bench_function("parse_100mb_realistic", |b| {
        b.iter(|| parse_junit_file(report, &Limits::default()).expect("parse"))
    });
    // As the eval's hidden_tests grader reads: every test's id and outcome kept (up to its cap).
    let with_ids = Limits {
        max_test_ids: TEST_IDS_CAP,
        ..Limits::default()
    };
    group.bench_function("parse_100mb_realistic_with_test_ids", |b| {
        b.iter(|| parse_junit_file(report, &with_ids).expect("parse"))
    });
    group.finish();
}

/// What a fresh process reading one report measured.
struct ChildRead {
    /// Peak RSS (KiB) after the read.
    rss: u64,
    tests: u64,
    /// Peak RSS (KiB) before the read.
    before: u64,
    cpu_micros: u64,
}

/// The cap on kept test ids the eval's hidden_tests grader uses.
const TEST_IDS_CAP: usize = 200_000;

/// Reads `report` once in a fresh process (keeping up to `ids` test ids) and returns what it
/// measured.
fn read_in_child(report: &Path, ids: usize) -> ChildRead {
    let exe = std::env::current_exe().expect("current exe");
    let output = Command::new(exe)
        .arg(PEAK_RSS_ARG)
        .arg(report)
        .arg(ids.to_string())
        .output()
        .expect("run the peak-RSS child");
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut fields = printed
        .split_whitespace()
        .map(|f| f.parse::<u64>().expect("a number"));
    let rss = fields.next().expect("child prints its peak RSS");
    let tests = fields.next().expect("child prints the tests it read");
    let before = fields
        .next()
        .expect("child prints its peak RSS before reading");
    let cpu_micros = fields
        .next()
        .expect("child prints the CPU time of the read");
    ChildRead {
        rss,
        tests,
        before,
        cpu_micros,
    }
}

/// The process's peak resident set (KiB): `VmHWM` from /proc/self/status. Unlike getrusage's
/// maxrss, it belongs to this process image alone (maxrss survives fork and exec, so a child
/// would report its parent's peak).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// CPU time (user + system) this process has used so far, in microseconds.
fn cpu_micros() -> u64 {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let micros = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    micros(usage.user_time()) + micros(usage.system_time())
}

/// In the child: read the report and print the process's peak RSS (KiB), the tests read, the
/// peak RSS before reading, and the CPU time the read took (µs).
fn child_read(report: &Path, ids: usize) {
    let before = peak_rss_kib();
    let cpu_before = cpu_micros();
    let limits = Limits {
        max_test_ids: ids,
        ..Limits::default()
    };
    let summary = parse_junit_file(report, &limits).expect("parse");
    let cpu = cpu_micros() - cpu_before;
    println!("{} {} {before} {cpu}", peak_rss_kib(), summary.tests);
}

fn report_peak_memory(dir: &Path, realistic: &Path) {
    let small = Mix {
        suites: 500,
        passing_per_suite: 400,
        failure_every: 1_000_000,
        output_every: 10,
    };
    let large = Mix {
        passing_per_suite: 4_000,
        ..small
    };
    let small_path = dir.join("passing-1x.xml");
    let large_path = dir.join("passing-10x.xml");
    let small_size = generate(&small_path, &small);
    let large_size = generate(&large_path, &large);
    for (label, path, size, tests, ids) in [
        (
            "1x passing",
            &small_path,
            small_size,
            small.suites * small.passing_per_suite,
            0,
        ),
        (
            "10x passing",
            &large_path,
            large_size,
            large.suites * large.passing_per_suite,
            0,
        ),
        (
            "realistic",
            &realistic.to_path_buf(),
            std::fs::metadata(realistic).map(|m| m.len()).unwrap_or(0),
            REALISTIC.suites * REALISTIC.passing_per_suite,
            0,
        ),
        (
            "realistic, test ids kept",
            &realistic.to_path_buf(),
            std::fs::metadata(realistic).map(|m| m.len()).unwrap_or(0),
            REALISTIC.suites * REALISTIC.passing_per_suite,
            TEST_IDS_CAP,
        ),
    ] {
        let read = read_in_child(path, ids);
        assert_eq!(read.tests, tests as u64, "the child read every test case");
        println!(
            "junit {label}: {tests} test cases, {:.1} MB: peak RSS {} KiB ({} KiB before \
             reading, +{} KiB); {:.0} MB/s per CPU second",
            size as f64 / 1e6,
            read.rss,
            read.before,
            read.rss.saturating_sub(read.before),
            size as f64 / read.cpu_micros.max(1) as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == PEAK_RSS_ARG) {
        let report = PathBuf::from(&args[at + 1]);
        let ids = args.get(at + 2).and_then(|n| n.parse().ok()).unwrap_or(0);
        return child_read(&report, ids);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let report = dir.path().join("realistic.xml");
    let size = generate(&report, &REALISTIC);
    println!("generated {:.1} MB JUnit report", size as f64 / 1e6);
    report_peak_memory(dir.path(), &report);
    let mut criterion = Criterion::default().configure_from_args();
    bench_junit(&mut criterion, &report, size);
    criterion.final_summary();
}
