//! Benchmarks of the hindsight store: exact and similar lookup on synthetic stores of 100,000 and
//! 1,000,000 entries (in memory), and loading a 100,000-entry store from disk.
//!
//! Run with `cargo bench --bench hindsight_store`. Templates are generated from the shapes real
//! signatures take (rustc, tsc, pytest, jest, clippy) with a seeded generator, so runs compare.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use meta_agent::hindsight::signature::signature_id;
use meta_agent::hindsight::store::{
    Catalog, CommandLine, Entry, Fix, Resolution, Store, StoreOptions, Timestamp, files,
};
use meta_agent::hindsight::{Signature, SignatureKind};

/// xorshift64*: a tiny seeded generator, enough for synthetic data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const TYPES: &[&str] = &[
    "u32",
    "i64",
    "usize",
    "String",
    "&str",
    "Vec<u8>",
    "Option<T>",
    "Result<(), Error>",
    "bool",
    "f64",
    "HashMap<String, Value>",
    "PathBuf",
    "number",
    "string",
    "undefined",
    "Promise<void>",
];
const RUST_CODES: &[&str] = &[
    "E0308", "E0382", "E0425", "E0599", "E0277", "E0433", "E0502",
];
const TS_CODES: &[&str] = &["TS2322", "TS2345", "TS2339", "TS2304", "TS7006"];
const PY_ERRORS: &[&str] = &[
    "AssertionError",
    "TypeError",
    "KeyError",
    "AttributeError",
    "ValueError",
    "ImportError",
];
const LINTS: &[&str] = &[
    "clippy::needless_return",
    "clippy::redundant_clone",
    "F401",
    "I001",
    "prefer-const",
    "semi",
];

fn ident(rng: &mut Rng, prefix: &str) -> String {
    format!("{prefix}{}", rng.below(50_000))
}

/// One realistic template (and its kind), varied by identifiers drawn from a large vocabulary.
fn template(rng: &mut Rng) -> (SignatureKind, String) {
    let (module, item) = (ident(rng, "module_"), ident(rng, "item_"));
    match rng.below(5) {
        0 => (
            SignatureKind::Compile,
            format!(
                "error[{}]: mismatched types expected `{}` found `{}` in src/{module}/{item}.rs",
                rng.pick(RUST_CODES),
                rng.pick(TYPES),
                rng.pick(TYPES)
            ),
        ),
        1 => (
            SignatureKind::Compile,
            format!(
                "src/{module}/{item}.ts: error {}: Type '{}' is not assignable to type '{}'",
                rng.pick(TS_CODES),
                rng.pick(TYPES),
                rng.pick(TYPES)
            ),
        ),
        2 => (
            SignatureKind::TestFailure,
            format!(
                "tests/test_{module}.py::test_{item} {}: assert {} == {}",
                rng.pick(PY_ERRORS),
                ident(rng, "value_"),
                ident(rng, "expected_")
            ),
        ),
        3 => (
            SignatureKind::TestFailure,
            format!(
                "{module} > {item} expect(received).toEqual(expected) Expected {} Received {}",
                ident(rng, "v"),
                ident(rng, "w")
            ),
        ),
        _ => (
            SignatureKind::Lint,
            format!(
                "{} in src/{module}/{item}.rs: {}",
                rng.pick(LINTS),
                ident(rng, "hint_")
            ),
        ),
    }
}

fn signature(rng: &mut Rng) -> Signature {
    let (kind, template) = template(rng);
    Signature {
        id: signature_id(kind, &template),
        kind,
        template,
    }
}

fn entry(rng: &mut Rng, now: Timestamp) -> Entry {
    let mut entry = Entry::new(&signature(rng), now);
    entry.occurrences = 1 + rng.below(20);
    let mut fix = Resolution::new(Fix::Command(CommandLine::Shell(format!(
        "fix-{}",
        rng.below(1000)
    ))));
    fix.outcomes.record(rng.below(2) == 0, now);
    entry.add_resolution(fix);
    entry
}

fn entries(n: usize, seed: u64) -> Vec<Entry> {
    let mut rng = Rng(seed);
    let now = Timestamp::from_unix_secs(1_790_000_000);
    (0..n).map(|_| entry(&mut rng, now)).collect()
}

fn store(n: usize) -> Store {
    let options = StoreOptions {
        catalog: Catalog::bundled().unwrap_or_default(),
        ..StoreOptions::default()
    };
    Store::from_entries(options, entries(n, 0x5eed))
}

/// A near miss of a stored template: one identifier changed, so it is similar but not exact.
fn near_miss(entry: &Entry) -> Signature {
    let template = entry.template.replacen("module_", "module_x", 1);
    Signature {
        id: signature_id(entry.kind, &template),
        kind: entry.kind,
        template,
    }
}

fn lookups(c: &mut Criterion) {
    for n in [100_000, 1_000_000] {
        let store = store(n);
        let probes: Vec<&Entry> = store.entries().iter().step_by(n / 1000).collect();
        let now = Timestamp::from_unix_secs(1_790_000_000);
        let mut group = c.benchmark_group("hindsight_store");
        group.measurement_time(Duration::from_secs(5));
        let mut i = 0;
        group.bench_function(BenchmarkId::new("exact_lookup", n), |b| {
            b.iter(|| {
                i = (i + 1) % probes.len();
                black_box(store.get(&probes[i].signature))
            })
        });
        let queries: Vec<Signature> = probes.iter().map(|e| near_miss(e)).collect();
        group.bench_function(BenchmarkId::new("similar_lookup", n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(store.lookup(&queries[i]).similar.len())
            })
        });
        group.bench_function(BenchmarkId::new("ranked_resolutions", n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(store.ranked_resolutions(&queries[i], now).len())
            })
        });
        group.finish();
    }
}

fn load(c: &mut Criterion) {
    let n = 100_000;
    let Ok(tmp) = tempfile::tempdir() else {
        return;
    };
    // The lock writes the store's .gitignore, which lets loads keep the derived cache.
    let Ok(dir) = files::StoreDir::open(tmp.path(), None) else {
        return;
    };
    if files::StoreLock::acquire(&dir).is_err() {
        return;
    }
    // Plain writes (no fsync per file) to set up quickly; the layout is the store's.
    for entry in entries(n, 0x10ad) {
        let path = files::entry_path(tmp.path(), &entry.signature);
        let written = path.parent().map(std::fs::create_dir_all);
        let text = serde_yaml::to_string(&entry).unwrap_or_default();
        if !matches!(written, Some(Ok(()))) || std::fs::write(&path, text).is_err() {
            return;
        }
    }
    let mut group = c.benchmark_group("hindsight_store");
    group.sample_size(10);
    let parsed = entries(n, 0x10ad);
    group.bench_function(BenchmarkId::new("build_in_memory", n), |b| {
        b.iter(|| black_box(Store::from_entries(StoreOptions::default(), parsed.clone()).len()))
    });
    group.finish();
    let open = |load_cache| {
        let options = StoreOptions {
            dir: Some(tmp.path().to_owned()),
            load_cache,
            ..StoreOptions::default()
        };
        Store::open(options).map(|s| s.len()).unwrap_or(0)
    };
    let mut group = c.benchmark_group("hindsight_store");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.bench_function(BenchmarkId::new("load_from_disk", n), |b| {
        b.iter(|| black_box(open(false)))
    });
    open(true); // writes the derived cache
    group.bench_function(BenchmarkId::new("load_from_disk_cached", n), |b| {
        b.iter(|| black_box(open(true)))
    });
    group.finish();
}

criterion_group!(benches, lookups, load);
criterion_main!(benches);
