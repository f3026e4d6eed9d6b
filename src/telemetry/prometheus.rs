//! A `metrics` recorder that keeps counters and histograms in memory and renders them in the
//! Prometheus text exposition format (0.0.4): sanitized names, escaped label values, histograms as
//! cumulative `_bucket`/`_sum`/`_count` series, families in name order so the output is stable.
//! It is installed only locally (`metrics::with_local_recorder`), never as the global recorder.
//! Gauges are not used by meta-agent and are dropped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};

/// Bucket upper bounds for a histogram, chosen from its (unsanitized) metric name.
pub type BucketPlan = fn(&str) -> &'static [f64];

/// The in-memory recorder; see the module documentation.
pub struct PrometheusText {
    buckets: BucketPlan,
    registry: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    help: BTreeMap<String, String>,
    kinds: BTreeMap<String, Kind>,
    series: BTreeMap<SeriesKey, Cell>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Histogram,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct SeriesKey {
    name: String,
    labels: Vec<(String, String)>,
}

enum Cell {
    Counter(Arc<CounterCell>),
    Histogram(Arc<HistogramCell>),
}

#[derive(Default)]
struct CounterCell(AtomicU64);

struct HistogramCell {
    bounds: &'static [f64],
    state: Mutex<HistogramState>,
}

#[derive(Default)]
struct HistogramState {
    /// Observations per bucket (not cumulative); the last slot is the `+Inf` overflow.
    per_bucket: Vec<u64>,
    sum: f64,
    count: u64,
}

impl PrometheusText {
    pub fn new(buckets: BucketPlan) -> Self {
        Self {
            buckets,
            registry: Mutex::new(Registry::default()),
        }
    }

    /// Everything recorded so far, as Prometheus text (ends with a newline unless empty).
    pub fn render(&self) -> String {
        let registry = self.lock();
        let mut out = String::new();
        let mut family = None;
        for (key, cell) in &registry.series {
            if family != Some(key.name.as_str()) {
                family = Some(key.name.as_str());
                write_family_header(&mut out, &registry, key, cell);
            }
            match cell {
                Cell::Counter(counter) => write_counter(&mut out, key, counter),
                Cell::Histogram(histogram) => write_histogram(&mut out, key, histogram),
            }
        }
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn describe(&self, key: KeyName, description: SharedString) {
        let name = sanitize_name(key.as_str());
        self.lock().help.insert(name, description.into_owned());
    }

    /// The cell of a series, created on first use; `None` when the name is taken by another kind.
    fn cell(&self, key: &Key, kind: Kind) -> Option<Cell> {
        let series = series_key(key);
        let mut registry = self.lock();
        let known = *registry.kinds.entry(series.name.clone()).or_insert(kind);
        if known != kind {
            return None;
        }
        let bounds = (self.buckets)(key.name());
        let cell = registry.series.entry(series).or_insert_with(|| match kind {
            Kind::Counter => Cell::Counter(Arc::default()),
            Kind::Histogram => Cell::Histogram(Arc::new(HistogramCell::new(bounds))),
        });
        Some(match cell {
            Cell::Counter(counter) => Cell::Counter(Arc::clone(counter)),
            Cell::Histogram(histogram) => Cell::Histogram(Arc::clone(histogram)),
        })
    }
}

impl Recorder for PrometheusText {
    fn describe_counter(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.describe(key, description);
    }

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_histogram(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.describe(key, description);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        match self.cell(key, Kind::Counter) {
            Some(Cell::Counter(counter)) => Counter::from_arc(counter),
            Some(Cell::Histogram(_)) | None => Counter::noop(),
        }
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        match self.cell(key, Kind::Histogram) {
            Some(Cell::Histogram(histogram)) => Histogram::from_arc(histogram),
            Some(Cell::Counter(_)) | None => Histogram::noop(),
        }
    }
}

impl CounterFn for CounterCell {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::Relaxed);
    }

    fn absolute(&self, value: u64) {
        self.0.fetch_max(value, Ordering::Relaxed);
    }
}

impl HistogramCell {
    fn new(bounds: &'static [f64]) -> Self {
        let state = HistogramState {
            per_bucket: vec![0; bounds.len() + 1],
            ..HistogramState::default()
        };
        Self {
            bounds,
            state: Mutex::new(state),
        }
    }
}

impl HistogramFn for HistogramCell {
    fn record(&self, value: f64) {
        let slot = self
            .bounds
            .iter()
            .position(|bound| value <= *bound)
            .unwrap_or(self.bounds.len());
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.per_bucket[slot] += 1;
        state.sum += value;
        state.count += 1;
    }
}

fn series_key(key: &Key) -> SeriesKey {
    let mut labels: Vec<(String, String)> = key
        .labels()
        .map(|label| (sanitize_label_name(label.key()), label.value().to_owned()))
        .collect();
    labels.sort();
    SeriesKey {
        name: sanitize_name(key.name()),
        labels,
    }
}

fn write_family_header(out: &mut String, registry: &Registry, key: &SeriesKey, cell: &Cell) {
    if let Some(help) = registry.help.get(&key.name) {
        let help = help.replace('\\', r"\\").replace('\n', r"\n");
        let _ = writeln!(out, "# HELP {} {help}", key.name);
    }
    let kind = match cell {
        Cell::Counter(_) => "counter",
        Cell::Histogram(_) => "histogram",
    };
    let _ = writeln!(out, "# TYPE {} {kind}", key.name);
}

fn write_counter(out: &mut String, key: &SeriesKey, counter: &CounterCell) {
    let value = counter.0.load(Ordering::Relaxed);
    let _ = writeln!(out, "{}{} {value}", key.name, labels(&key.labels, None));
}

fn write_histogram(out: &mut String, key: &SeriesKey, histogram: &HistogramCell) {
    let state = histogram
        .state
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let mut cumulative = 0;
    let bounds = histogram.bounds.iter().map(|b| format_value(*b));
    let uppers = bounds.chain(std::iter::once("+Inf".to_owned()));
    for (upper, observed) in uppers.zip(&state.per_bucket) {
        cumulative += observed;
        let labels = labels(&key.labels, Some(&upper));
        let _ = writeln!(out, "{}_bucket{labels} {cumulative}", key.name);
    }
    let plain = labels(&key.labels, None);
    let _ = writeln!(out, "{}_sum{plain} {}", key.name, format_value(state.sum));
    let _ = writeln!(out, "{}_count{plain} {}", key.name, state.count);
}

/// `{a="x",b="y"}` (with `le` last when given), or nothing when there are no labels.
fn labels(labels: &[(String, String)], le: Option<&str>) -> String {
    let le = le.map(|le| ("le", le));
    let pairs: Vec<String> = labels
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .chain(le)
        .map(|(name, value)| format!("{name}=\"{}\"", escape_label_value(value)))
        .collect();
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

fn escape_label_value(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// A metric name as Prometheus requires: `[a-zA-Z_:][a-zA-Z0-9_:]*` (`meta_agent.loop.total` →
/// `meta_agent_loop_total`).
fn sanitize_name(name: &str) -> String {
    sanitize(name, |c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A label name as Prometheus requires: `[a-zA-Z_][a-zA-Z0-9_]*`.
fn sanitize_label_name(name: &str) -> String {
    sanitize(name, |c| c.is_ascii_alphanumeric() || c == '_')
}

fn sanitize(name: &str, allowed: impl Fn(char) -> bool) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A sample value the way Prometheus parses it (`+Inf`, `-Inf`, `NaN`, else Rust's shortest form).
fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_buckets(_: &str) -> &'static [f64] {
        &[1.0, 2.5]
    }

    fn render(record: impl FnOnce()) -> String {
        let recorder = PrometheusText::new(small_buckets);
        metrics::with_local_recorder(&recorder, record);
        recorder.render()
    }

    #[test]
    fn counters_sum_per_label_set_in_stable_order() {
        let text = render(|| {
            metrics::counter!("x.total", "b" => "2", "a" => "1").increment(2);
            metrics::counter!("x.total", "a" => "0").increment(1);
            metrics::counter!("x.total", "a" => "1", "b" => "2").increment(3);
        });
        assert_eq!(
            text,
            "# TYPE x_total counter\nx_total{a=\"0\"} 1\nx_total{a=\"1\",b=\"2\"} 5\n"
        );
    }

    #[test]
    fn histograms_are_cumulative_with_sum_and_count() {
        let text = render(|| {
            metrics::describe_histogram!("h.ms", "Line one\nwith \\ backslash");
            for value in [0.5, 1.0, 2.0, 7.25] {
                metrics::histogram!("h.ms").record(value);
            }
        });
        let expected = "# HELP h_ms Line one\\nwith \\\\ backslash\n# TYPE h_ms histogram\n\
            h_ms_bucket{le=\"1\"} 2\nh_ms_bucket{le=\"2.5\"} 3\nh_ms_bucket{le=\"+Inf\"} 4\n\
            h_ms_sum 10.75\nh_ms_count 4\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn label_values_are_escaped() {
        let text = render(|| {
            metrics::counter!("c", "gate" => "a\"b\\c\nd").increment(1);
        });
        assert!(text.contains(r#"c{gate="a\"b\\c\nd"} 1"#), "{text}");
    }

    #[test]
    fn names_are_sanitized() {
        assert_eq!(
            sanitize_name("meta_agent.gate.latency_ms"),
            "meta_agent_gate_latency_ms"
        );
        assert_eq!(sanitize_name("9lives-x"), "_9lives_x");
        assert_eq!(sanitize_label_name("a:b"), "a_b");
    }

    #[test]
    fn a_name_keeps_its_first_kind() {
        let text = render(|| {
            metrics::counter!("same").increment(1);
            metrics::histogram!("same").record(1.0);
        });
        assert_eq!(text, "# TYPE same counter\nsame 1\n");
    }

    #[test]
    fn special_values() {
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(1234.0), "1234");
    }
}
