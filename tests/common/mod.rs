//! Helpers shared by the integration tests: paths to fixtures and the built binary.

#![allow(dead_code)]

use std::path::PathBuf;

/// The repository's `fixtures/` directory.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// A command for the `meta-agent` binary under test, with a scrubbed environment.
pub fn meta_agent() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_meta-agent"));
    cmd.env_remove("RUST_LOG");
    cmd
}
