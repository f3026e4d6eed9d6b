//! Configuration: `.meta-agent.yml`, the gate presets, and the defaults embedded in the binary.
//!
//! Two stages. [`raw`] mirrors the file and rejects unknown keys and wrong types with the file,
//! line and key; [`resolve`] applies the preset (chosen by `preset:` or detected by [`preset`]),
//! the defaults and the cross-field checks, and produces the documented [`Config`] the rest of the
//! program reads. Loading reads files only; detection that needs a child process (`cargo
//! metadata`, read by [`preset::describe_cargo_metadata`]) goes through the exec module.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod layout;
pub mod memory;
pub mod preset;
pub mod raw;
pub mod resolve;
pub mod values;

use std::path::{Path, PathBuf};

pub use resolve::{
    CommitSettings, Config, CoverageCheck, GateCommand, GateSpec, HindsightSettings, LlmSettings,
    LoopSettings, SandboxSettings, SetupCommand, TelemetrySettings, VerifySettings,
};

/// File names looked for at the repository root, in order.
pub const CONFIG_FILE_NAMES: [&str; 2] = [".meta-agent.yml", ".meta-agent.yaml"];

/// Why the configuration could not be loaded. Every variant names the file, and the line and key
/// where they are known.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The YAML is invalid, a key is unknown, or a value has the wrong type.
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file parsed but a value is not acceptable (`key` is a dotted path such as
    /// `gates[1].env.GITHUB_TOKEN`; `line` is 0 when it could not be found).
    #[error("{path}:{line}: {key}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        key: String,
        message: String,
    },
    /// `preset:` names a preset that does not exist.
    #[error("{path}: unknown preset `{name}` (known: {known})")]
    UnknownPreset {
        path: PathBuf,
        name: String,
        known: String,
    },
    /// A preset bundled in the binary is broken (a bug in meta-agent).
    #[error("bundled preset {name} is invalid: {message}")]
    BadPreset { name: String, message: String },
}

impl ConfigError {
    /// The same error naming its file beneath `to` instead of `from` (a local run reads the
    /// configuration from its worktree `from`; the user's file is the same path in their
    /// checkout `to`). A path elsewhere is left as it is.
    pub fn rebased(self, from: &Path, to: &Path) -> ConfigError {
        let moved = |path: PathBuf| match path.strip_prefix(from) {
            Ok(inside) => to.join(inside),
            Err(_) => path,
        };
        match self {
            ConfigError::Read { path, source } => ConfigError::Read {
                path: moved(path),
                source,
            },
            ConfigError::Parse {
                path,
                line,
                column,
                message,
            } => ConfigError::Parse {
                path: moved(path),
                line,
                column,
                message,
            },
            ConfigError::Invalid {
                path,
                line,
                key,
                message,
            } => ConfigError::Invalid {
                path: moved(path),
                line,
                key,
                message,
            },
            ConfigError::UnknownPreset { path, name, known } => ConfigError::UnknownPreset {
                path: moved(path),
                name,
                known,
            },
            ConfigError::BadPreset { name, message } => ConfigError::BadPreset { name, message },
        }
    }
}

/// Finds the configuration file of a repository: the explicit path when given (it must exist),
/// otherwise the first of [`CONFIG_FILE_NAMES`] present at the root, otherwise none.
pub fn find_config_file(
    repo_root: &Path,
    explicit: Option<&Path>,
) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(path) = explicit {
        let path = if path.is_absolute() {
            path.to_owned()
        } else {
            repo_root.join(path)
        };
        return match std::fs::metadata(&path) {
            Ok(_) => Ok(Some(path)),
            Err(source) => Err(ConfigError::Read { path, source }),
        };
    }
    Ok(CONFIG_FILE_NAMES
        .iter()
        .map(|name| repo_root.join(name))
        .find(|path| path.is_file()))
}

/// Parses configuration text; `path` is used in error messages only.
pub fn parse_raw(text: &str, path: &Path) -> Result<raw::RawConfig, ConfigError> {
    let parsed: raw::RawConfig = serde_yaml::from_str(text).map_err(|err| {
        let (line, column) = err
            .location()
            .map_or((0, 0), |loc| (loc.line(), loc.column()));
        ConfigError::Parse {
            path: path.to_owned(),
            line,
            column,
            message: err.to_string(),
        }
    })?;
    if parsed.version != raw::SCHEMA_VERSION {
        return Err(ConfigError::Invalid {
            path: path.to_owned(),
            line: resolve::line_of(text, "version:"),
            key: "version".into(),
            message: format!(
                "schema version {} is not supported (this meta-agent reads version {})",
                parsed.version,
                raw::SCHEMA_VERSION
            ),
        });
    }
    Ok(parsed)
}

/// Reads and parses a configuration file.
pub fn read_raw(path: &Path) -> Result<(raw::RawConfig, String), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok((parse_raw(&text, path)?, text))
}

/// The JSON Schema of `.meta-agent.yml`, generated from the raw types.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(raw::RawConfig);
    schema.to_value()
}

/// What [`load`] needs.
pub struct LoadInput<'a> {
    pub repo_root: &'a Path,
    /// `--config`, when given.
    pub explicit: Option<&'a Path>,
    /// The parent's environment (filtered before `cargo metadata` sees it).
    pub parent_env: &'a [(String, String)],
    /// The configuration file's text read from somewhere trusted instead of the checkout (a
    /// pull request's run reads the default branch's file through GitHub's API), when set:
    /// then no file of the checkout is read, `explicit` included.
    pub given: Option<GivenFile>,
}

/// A configuration file read elsewhere than the checkout.
#[derive(Debug, Clone)]
pub struct GivenFile {
    /// Where it was read (for messages).
    pub path: PathBuf,
    /// Its text; `None`: there is no such file there (defaults and detection apply).
    pub text: Option<String>,
}

/// Loads the configuration of a repository: the file if any, the preset it names or the one
/// detected, defaults for everything else.
pub async fn load<R: meta_agent_exec::CommandRunner>(
    input: LoadInput<'_>,
    runner: &R,
) -> Result<Config, ConfigError> {
    let (file, parsed) = match &input.given {
        Some(given) => {
            let parsed = given
                .text
                .as_deref()
                .map(|text| Ok::<_, ConfigError>((parse_raw(text, &given.path)?, text.to_owned())))
                .transpose()?;
            (parsed.as_ref().map(|_| given.path.clone()), parsed)
        }
        None => {
            let file = find_config_file(input.repo_root, input.explicit)?;
            let parsed = file.as_deref().map(read_raw).transpose()?;
            (file, parsed)
        }
    };
    let path = file
        .clone()
        .unwrap_or_else(|| input.repo_root.join(CONFIG_FILE_NAMES[0]));
    let requested = parsed.as_ref().and_then(|(raw, _)| raw.preset.clone());
    let (preset_name, mut reason) = match requested.as_deref() {
        None | Some("auto") => {
            let detection = preset::detect_files(input.repo_root);
            (detection.preset.map(str::to_owned), detection.reason)
        }
        Some("none") => (None, "preset: none".to_owned()),
        Some(name) => (
            Some(name.to_owned()),
            format!("preset: {name} in {}", path.display()),
        ),
    };
    let file_gates = parsed
        .as_ref()
        .and_then(|(raw, _)| raw.gates.clone())
        .unwrap_or_default();
    let (preset, preset_setup) = match &preset_name {
        Some(name) => {
            let tailored = layout::tailor(layout::TailorInput {
                name,
                preset: preset::preset_of(name, &path)?,
                repo_root: input.repo_root,
                file_gates: &file_gates,
            });
            for note in &tailored.notes {
                reason = format!("{reason}; {note}");
            }
            (
                Some((name.clone(), tailored.preset.gates)),
                tailored.preset.setup,
            )
        }
        None => (None, Vec::new()),
    };
    if preset_name.as_deref() == Some("rust") {
        reason = format!(
            "{reason}; {}",
            describe_cargo(input.repo_root, input.parent_env, runner).await
        );
    }
    resolve::resolve(resolve::ResolveInput {
        file: parsed
            .as_ref()
            .map(|(raw, text)| (path.as_path(), raw, text.as_str())),
        preset,
        preset_reason: reason,
    })
    .and_then(|mut config| {
        let file_has_setup = parsed.as_ref().is_some_and(|(raw, _)| raw.setup.is_some());
        if let (false, Some(name)) = (file_has_setup, &preset_name) {
            config.setup = resolve::preset_setup(name, &preset_setup)?;
        }
        Ok(config)
    })
}

/// `cargo metadata --no-deps`, run through the exec module, described in one line.
async fn describe_cargo<R: meta_agent_exec::CommandRunner>(
    repo_root: &Path,
    parent_env: &[(String, String)],
    runner: &R,
) -> String {
    let env = meta_agent_exec::env::child_env(parent_env.iter().cloned(), &[], []);
    let spec = meta_agent_exec::CommandSpec {
        program: meta_agent_exec::Program::Argv(
            [
                "cargo",
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ]
            .map(str::to_owned)
            .to_vec(),
        ),
        cwd: repo_root.to_owned(),
        isolation: meta_agent_exec::sandbox::Isolation::for_repository_commands(&env, &[]),
        env,
        timeout: std::time::Duration::from_secs(60),
        kill_grace: std::time::Duration::from_secs(2),
        output_cap: 64 << 20,
    };
    match runner.run(spec).await {
        Ok(output) if output.termination.success() && !output.stdout.truncated => {
            preset::describe_cargo_metadata(output.stdout.text.as_bytes())
                .unwrap_or_else(|err| format!("cargo metadata output unreadable: {err}"))
        }
        Ok(output) => format!(
            "cargo metadata failed: {}",
            output
                .stderr
                .text
                .lines()
                .find(|line| line.contains("error"))
                .unwrap_or("no details")
        ),
        Err(err) => format!("cargo metadata could not run: {err}"),
    }
}
