//! Finding this test's own processes on a shared machine: a mark unique to the test process and
//! the call (never a constant: the same suite may run twice at once, in another checkout), and
//! the scan of `/proc` for processes whose command line or environment carries it.

use std::sync::atomic::{AtomicU64, Ordering};

/// A mark no other test, and no other run of the suite, carries: `label`, this process's id, a
/// per-process counter and the clock.
pub fn unique_mark(label: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let next = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{label}-{}-{next}-{nanos}", std::process::id())
}

/// A mark of digits only (for a `sleep` argument), unique like [`unique_mark`].
pub fn unique_digits() -> String {
    unique_mark("")
        .chars()
        .filter(char::is_ascii_digit)
        .collect()
}

/// Processes (other than this one) whose command line or environment carries `mark`, each as
/// `pid N: <command line>`.
pub fn processes_with(mark: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().into_owned();
            (pid.parse::<u32>().is_ok() && pid != me).then_some((pid, entry.path()))
        })
        .filter_map(|(pid, dir)| {
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
            let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let carries = line.contains(mark) || String::from_utf8_lossy(&environ).contains(mark);
            carries.then(|| format!("pid {pid}: {}", line.chars().take(200).collect::<String>()))
        })
        .collect()
}
