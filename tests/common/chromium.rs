//! A real headless browser for the pages the bot writes (`report.html`): Debian's `chromium`,
//! started with a fresh profile and no background traffic, its every request sent through a
//! loopback proxy that records it (so "no network request" is observed, not assumed), its console
//! read from its log. A missing `chromium` fails the test saying so (`scripts/test.sh` installs
//! it).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::file_server::FileServer;
use super::http::Recorded;

/// Chromium's own background services: it calls them for any page, an empty one included
/// (network time, the component updater, sign-in), whatever the flags; no page causes them, so
/// they are not the page's requests. Every other request is.
const BROWSER_OWN_HOSTS: [&str; 3] = [
    "clients2.google.com",
    "update.googleapis.com",
    "accounts.google.com",
];

fn browser_own(request: &Recorded) -> bool {
    let target = request
        .path
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    let host = target.split([':', '/']).next().unwrap_or_default();
    BROWSER_OWN_HOSTS.contains(&host)
}

/// What a page did when it was opened.
pub struct Opened {
    /// The DOM after load (`--dump-dom`).
    pub dom: String,
    /// The console's messages (errors, CSP violations).
    pub console: Vec<String>,
    /// Every request the browser made for the page (through the recording proxy; the browser's
    /// own background calls left out).
    pub requests: Vec<Recorded>,
}

fn program() -> PathBuf {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("chromium"))
        .find(|candidate| candidate.is_file());
    found.unwrap_or_else(|| {
        panic!("chromium is missing: the report.html tests need Debian's chromium (scripts/test.sh installs it)")
    })
}

/// A headless chromium with a fresh profile, every request through `proxy`.
fn browser(profile: &Path, proxy: &FileServer) -> Command {
    let mut cmd = Command::new(program());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--proxy-bypass-list=<-loopback>",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--proxy-server={}", proxy.url));
    cmd
}

/// Runs chromium on `page` with `args` (fresh profile, recording proxy): its output, and the
/// requests it made that were not its own background calls.
fn run(page: &Path, args: &[String]) -> (std::process::Output, Vec<Recorded>) {
    let profile = tempfile::tempdir().unwrap();
    let proxy = FileServer::start();
    let out = browser(profile.path(), &proxy)
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = proxy
        .requests()
        .into_iter()
        .filter(|request| !browser_own(request))
        .collect();
    (out, requests)
}

/// Opens `page` (a file) and reports what it did.
pub fn open(page: &Path) -> Opened {
    let (out, requests) = run(page, &["--dump-dom".to_owned()]);
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    Opened {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console,
        requests,
    }
}

/// A PNG of `page` as a window `width` × `height` shows it, written to `png`.
pub fn screenshot(page: &Path, png: &Path, width: u32, height: u32) {
    let args = [
        format!("--screenshot={}", png.display()),
        format!("--window-size={width},{height}"),
        "--hide-scrollbars".to_owned(),
    ];
    let (_, requests) = run(page, &args);
    assert!(requests.is_empty(), "the screenshot made requests");
}

/// The page's landmarks in document order: `header`, `main`, `footer` and each `section`'s id.
pub fn landmarks(dom: &str) -> Vec<String> {
    let pattern =
        regex::Regex::new(r#"<(header|main|footer|nav|section id="([^"]+)")[\s>]"#).unwrap();
    pattern
        .captures_iter(dom)
        .map(|found| match found.get(2) {
            Some(id) => format!("section#{}", id.as_str()),
            None => found[1].to_owned(),
        })
        .collect()
}
