//! The environment a child process gets: built from nothing, never inherited.
//!
//! [`child_env`] is a pure function: the parent's variables go through an allowlist (toolchains,
//! locale, PATH and HOME, plus what the configuration names), and nothing whose name looks like a
//! secret passes, whatever the allowlist says. A build directory the user's shell names outside
//! the command's own tree (`CARGO_TARGET_DIR`, `CARGO_BUILD_TARGET_DIR` as an absolute path) does
//! not pass either: what the bot builds from code the model wrote must not land where the user's
//! own builds read, and the sandbox would refuse the writes anyway (the gate would fail for the
//! machine, not the code); cargo then builds in the checkout's `target/`. The caller then adds
//! the gate's own variables (a repository that wants a shared build directory names it there,
//! with `sandbox.writable`), which configuration loading has already checked for secret-looking
//! names.

use std::collections::BTreeMap;

/// Variables passed through from the parent unless they look like secrets (exact names, or
/// prefixes ending in `*`).
pub const BASE_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_*",
    "CARGO_INCREMENTAL",
    "CARGO_TERM_*",
    "RUST_BACKTRACE",
    "RUST_MIN_STACK",
    "VIRTUAL_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "PYTHONDONTWRITEBYTECODE",
    "PIP_INDEX_URL",
    "NODE_PATH",
    "NODE_OPTIONS",
    "NPM_CONFIG_CACHE",
    "NVM_DIR",
    "JAVA_HOME",
    "MAVEN_OPTS",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "CC",
    "CXX",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
];

/// Variables set for every child, overriding the parent's.
pub const FIXED: &[(&str, &str)] = &[
    ("CI", "true"),
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("CARGO_TERM_COLOR", "never"),
    ("META_AGENT", "1"),
];

pub use meta_agent_redact::secrets::{
    carries_credential, is_secret_name, is_secret_var, url_credential, url_userinfo,
};

/// The variables that move cargo's build directory.
const BUILD_DIRS: &[&str] = &["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"];

/// Whether a parent variable names a build directory outside the command's own tree (an
/// absolute one; a relative one resolves inside it).
fn outside_build_dir(name: &str, value: &str) -> bool {
    BUILD_DIRS.contains(&name) && std::path::Path::new(value).is_absolute()
}

/// True when `name` matches an allowlist entry (exact, or `PREFIX*`).
fn allowed(name: &str, allowlist: &[&str]) -> bool {
    allowlist.iter().any(|entry| match entry.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == *entry,
    })
}

/// The environment of a child: allowlisted parent variables minus secrets, then [`FIXED`], then
/// `extra` (the gate's own variables; secret-looking names are dropped here too).
pub fn child_env<'a>(
    parent: impl IntoIterator<Item = (String, String)>,
    extra_allow: &[String],
    extra: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> BTreeMap<String, String> {
    let mut allowlist: Vec<&str> = BASE_ALLOWLIST.to_vec();
    allowlist.extend(extra_allow.iter().map(String::as_str));
    let mut env: BTreeMap<String, String> = parent
        .into_iter()
        .filter(|(name, value)| allowed(name, &allowlist) && !is_secret_var(name, value))
        .filter(|(name, value)| !outside_build_dir(name, value))
        .collect();
    for (name, value) in FIXED {
        env.insert((*name).to_owned(), (*value).to_owned());
    }
    for (name, value) in extra {
        if !is_secret_name(name) {
            env.insert(name.clone(), value.clone());
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(String, String)> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("GITHUB_TOKEN", "ghs_secret"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("ACTIONS_RUNTIME_TOKEN", "x"),
            ("GITHUB_ENV", "/tmp/env"),
            ("LC_ALL", "C.UTF-8"),
            ("RANDOM_THING", "1"),
            ("MY_APP_DB_PASSWORD", "hunter2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// The user's shell may point cargo at a shared build directory; the bot's commands build in
    /// their own tree instead. A relative one stays (it is inside), and a gate's own setting
    /// stays (the repository chose it).
    #[test]
    fn a_build_directory_outside_the_tree_does_not_pass() {
        let parent = [
            ("CARGO_TARGET_DIR", "/home/u/.cache/shared-target"),
            ("CARGO_BUILD_TARGET_DIR", "/srv/target"),
            ("CARGO_INCREMENTAL", "0"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let env = child_env(parent, &[], []);
        assert!(!env.contains_key("CARGO_TARGET_DIR"), "{env:?}");
        assert!(!env.contains_key("CARGO_BUILD_TARGET_DIR"), "{env:?}");
        assert_eq!(env["CARGO_INCREMENTAL"], "0");

        let relative = [("CARGO_TARGET_DIR".to_owned(), "build/target".to_owned())];
        assert_eq!(
            child_env(relative, &[], [])["CARGO_TARGET_DIR"],
            "build/target"
        );
        let (name, value) = ("CARGO_TARGET_DIR".to_owned(), "/ci/target".to_owned());
        let own = child_env(Vec::new(), &[], [(&name, &value)]);
        assert_eq!(own["CARGO_TARGET_DIR"], "/ci/target");
    }

    #[test]
    fn secrets_never_pass_even_when_allowlisted() {
        let allow = vec![
            "GITHUB_*".to_owned(),
            "OPENAI_API_KEY".to_owned(),
            "MY_APP_*".to_owned(),
        ];
        let env = child_env(parent(), &allow, []);
        for secret in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "ACTIONS_RUNTIME_TOKEN",
            "GITHUB_ENV",
            "MY_APP_DB_PASSWORD",
        ] {
            assert!(!env.contains_key(secret), "{secret} leaked");
        }
        assert_eq!(env.get("PATH").map(String::as_str), Some("/usr/bin"));
        assert_eq!(env.get("LC_ALL").map(String::as_str), Some("C.UTF-8"));
    }

    /// An allowlisted index URL with `user:password@` is a credential: not passed on.
    #[test]
    fn an_allowlisted_variable_whose_value_carries_a_credential_is_a_secret() {
        let mut parent = parent();
        parent.push((
            "PIP_INDEX_URL".into(),
            "https://bob:CANARY-pass@pypi.example/simple".into(),
        ));
        parent.push((
            "PIP_EXTRA_INDEX_URL".into(),
            "https://pypi.example/simple".into(),
        ));
        parent.push((
            "PIP_TRUSTED".into(),
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789".into(),
        ));
        let env = child_env(parent, &["PIP_*".to_owned()], []);
        assert!(!env.contains_key("PIP_INDEX_URL"), "{env:?}");
        assert!(!env.contains_key("PIP_TRUSTED"), "{env:?}");
        assert!(env.contains_key("PIP_EXTRA_INDEX_URL"));
        assert_eq!(url_userinfo("https://t@h/x"), Some("t"));
        assert_eq!(url_userinfo("https://h/a@b"), None);
        assert_eq!(url_credential("https://bob:s3cret@h/x"), Some("s3cret"));
        assert_eq!(
            url_credential("postgresql://meta_agent@127.0.0.1:5432/db"),
            None
        );
        assert!(!carries_credential(
            "postgresql://meta_agent@127.0.0.1:5432/db"
        ));
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        assert_eq!(
            url_credential(&format!("https://{token}@github.com/o/r")),
            Some(token)
        );
    }

    #[test]
    fn otlp_headers_never_reach_a_child_even_when_otel_is_allowlisted() {
        let mut parent = parent();
        parent.push(("OTEL_EXPORTER_OTLP_HEADERS".into(), "x-key=abc123".into()));
        parent.push(("OTEL_EXPORTER_OTLP_ENDPOINT".into(), "http://c:4318".into()));
        let env = child_env(parent.clone(), &[], []);
        assert!(!env.keys().any(|name| name.starts_with("OTEL_")), "{env:?}");
        let env = child_env(parent, &["OTEL_*".to_owned()], []);
        assert!(!env.contains_key("OTEL_EXPORTER_OTLP_HEADERS"));
        assert!(env.contains_key("OTEL_EXPORTER_OTLP_ENDPOINT"));
    }

    #[test]
    fn unlisted_variables_are_dropped_and_fixed_ones_set() {
        let env = child_env(parent(), &[], []);
        assert!(!env.contains_key("RANDOM_THING"));
        assert_eq!(env.get("CI").map(String::as_str), Some("true"));
        let allow = vec!["RANDOM_*".to_owned()];
        assert!(child_env(parent(), &allow, []).contains_key("RANDOM_THING"));
    }

    #[test]
    fn secret_names_are_recognised_case_insensitively() {
        for name in [
            "github_token",
            "Anthropic_Api_Key",
            "AWS_SECRET_ACCESS_KEY",
            "NPM_TOKEN",
            "GIT_CONFIG_VALUE_0",
            "META_AGENT_DATABASE_URL",
            "database_url",
            "PGPASSWORD",
            "OTEL_EXPORTER_OTLP_HEADERS",
            "otel_exporter_otlp_traces_headers",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "CARGO_HOME",
            "JEST_JUNIT_OUTPUT_DIR",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
