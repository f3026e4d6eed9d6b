//! The Node presets adapted to the project: the package manager (from `packageManager` in
//! `package.json`, else from the lockfile) installs the locked dependencies in the setup phase,
//! without writing another manager's lockfile; a Yarn Plug'n'Play project runs its test runner
//! through `yarn`; and the workspaces (`workspaces` in `package.json`, `pnpm-workspace.yaml`)
//! whose members declare the test runner.

use std::path::{Path, PathBuf};

use super::{Tailored, read};
use crate::raw::{RawCommand, RawSetup};

/// How deep workspace member directories are looked for, below the root.
const MEMBER_DEPTH: usize = 3;

/// The tool that installs a Node project's dependencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageManager {
    Npm,
    Pnpm,
    /// Yarn 1 (`node_modules`).
    YarnClassic,
    /// Yarn 2 and later (`.yarnrc.yml`; Plug'n'Play unless `nodeLinker: node-modules`).
    YarnBerry,
    Bun,
}

impl PackageManager {
    fn name(self) -> &'static str {
        match self {
            PackageManager::Npm => "npm",
            PackageManager::Pnpm => "pnpm",
            PackageManager::YarnClassic => "yarn (classic)",
            PackageManager::YarnBerry => "yarn (berry)",
            PackageManager::Bun => "bun",
        }
    }

    /// The install command: the lockfile as written (never rewritten), the local caches first.
    fn install(self, locked: bool) -> &'static str {
        match (self, locked) {
            (PackageManager::Npm, true) => "npm ci --prefer-offline --no-audit --no-fund",
            (PackageManager::Npm, false) => {
                "npm install --no-package-lock --prefer-offline --no-audit --no-fund"
            }
            (PackageManager::Pnpm, true) => {
                "$(command -v pnpm || echo corepack pnpm) install --frozen-lockfile --prefer-offline"
            }
            (PackageManager::Pnpm, false) => {
                "$(command -v pnpm || echo corepack pnpm) install --no-lockfile --prefer-offline"
            }
            (PackageManager::YarnClassic, true) => {
                "$(command -v yarn || echo corepack yarn) install --frozen-lockfile --prefer-offline"
            }
            (PackageManager::YarnClassic, false) => {
                "$(command -v yarn || echo corepack yarn) install --no-lockfile --prefer-offline"
            }
            (PackageManager::YarnBerry, _) => {
                "$(command -v yarn || echo corepack yarn) install --immutable"
            }
            (PackageManager::Bun, _) => "bun install --frozen-lockfile",
        }
    }
}

/// The lockfiles, and the package manager each belongs to.
const LOCKFILES: [(&str, PackageManager); 6] = [
    ("pnpm-lock.yaml", PackageManager::Pnpm),
    ("yarn.lock", PackageManager::YarnClassic),
    ("package-lock.json", PackageManager::Npm),
    ("npm-shrinkwrap.json", PackageManager::Npm),
    ("bun.lock", PackageManager::Bun),
    ("bun.lockb", PackageManager::Bun),
];

/// The project's package manager and whether it has a lockfile: `packageManager` in
/// `package.json` first (Corepack's field), then the lockfile, then npm.
pub fn package_manager(root: &Path) -> (PackageManager, bool) {
    let lock = LOCKFILES
        .iter()
        .find(|(file, _)| root.join(file).is_file())
        .map(|(_, manager)| *manager);
    let declared = manifest(&root.join("package.json"))
        .and_then(|json| json.get("packageManager")?.as_str().map(str::to_owned))
        .and_then(|field| declared_manager(&field));
    let manager = declared.or(lock).unwrap_or(PackageManager::Npm);
    let berry = root.join(".yarnrc.yml").is_file()
        || read(root, "yarn.lock").is_some_and(|text| text.contains("__metadata:"));
    let manager = match manager {
        PackageManager::YarnClassic if berry => PackageManager::YarnBerry,
        other => other,
    };
    (manager, lock.is_some())
}

/// `pnpm@9.1.0+sha512...` as its manager.
fn declared_manager(field: &str) -> Option<PackageManager> {
    let (name, version) = field.split_once('@').unwrap_or((field, ""));
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or(1);
    match name {
        "npm" => Some(PackageManager::Npm),
        "pnpm" => Some(PackageManager::Pnpm),
        "yarn" if major >= 2 => Some(PackageManager::YarnBerry),
        "yarn" => Some(PackageManager::YarnClassic),
        "bun" => Some(PackageManager::Bun),
        _ => None,
    }
}

/// A `package.json`, parsed; `None` when missing or not JSON.
pub fn manifest(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The `package.json` of every workspace member (npm and Yarn `workspaces`, pnpm's
/// `pnpm-workspace.yaml`), sorted; empty for a project without workspaces.
pub fn workspace_manifests(root: &Path) -> Vec<PathBuf> {
    let patterns = workspace_patterns(root);
    if patterns.is_empty() {
        return Vec::new();
    }
    let mut builder = globset::GlobSetBuilder::new();
    for pattern in &patterns {
        let pattern = pattern.trim_start_matches("./").trim_end_matches('/');
        if let Ok(glob) = globset::Glob::new(pattern) {
            builder.add(glob);
        }
    }
    let Ok(set) = builder.build() else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .min_depth(1)
        .max_depth(MEMBER_DEPTH)
        .into_iter()
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            entry.file_type().is_dir() && name != "node_modules" && !name.starts_with('.')
        })
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .path()
                .strip_prefix(root)
                .is_ok_and(|relative| set.is_match(relative))
        })
        .map(|entry| entry.path().join("package.json"))
        .filter(|manifest| manifest.is_file())
        .collect();
    found.sort();
    found
}

/// The member patterns: `workspaces` (a list, or `{packages: [...]}`) in `package.json`, and
/// `packages:` in `pnpm-workspace.yaml`. Exclusions (`!pattern`) are left out.
fn workspace_patterns(root: &Path) -> Vec<String> {
    let mut patterns = Vec::new();
    if let Some(json) = manifest(&root.join("package.json")) {
        let workspaces = json.get("workspaces");
        let list = workspaces
            .and_then(|w| w.as_array())
            .or_else(|| workspaces?.get("packages")?.as_array());
        patterns.extend(
            list.into_iter()
                .flatten()
                .filter_map(|p| p.as_str())
                .map(str::to_owned),
        );
    }
    if let Some(text) = read(root, "pnpm-workspace.yaml")
        && let Ok(yaml) = serde_yaml::from_str::<serde_yaml::Value>(&text)
        && let Some(list) = yaml.get("packages").and_then(|p| p.as_sequence())
    {
        patterns.extend(list.iter().filter_map(|p| p.as_str()).map(str::to_owned));
    }
    patterns.retain(|pattern| !pattern.starts_with('!'));
    patterns
}

pub(super) fn tailor(tailored: &mut Tailored, root: &Path) {
    let (manager, locked) = package_manager(root);
    let install = manager.install(locked);
    tailored.preset.setup = vec![RawSetup {
        run: RawCommand::Shell(format!("[ -d node_modules ] || {install}")),
        workdir: None,
        timeout: tailored
            .preset
            .setup
            .first()
            .and_then(|setup| setup.timeout),
        env: None,
        credentials: None,
    }];
    let lock = if locked { "locked" } else { "no lockfile" };
    tailored.notes.push(format!(
        "package manager {} ({lock}): setup installs the dependencies unless node_modules exists",
        manager.name()
    ));
    if root.join(".pnp.cjs").is_file() {
        plug_n_play(tailored);
    }
}

/// Yarn Plug'n'Play has no `node_modules/.bin`: the runner runs through `yarn`.
fn plug_n_play(tailored: &mut Tailored) {
    for gate in &mut tailored.preset.gates {
        if let Some(RawCommand::Argv(argv)) = &mut gate.run
            && argv.starts_with(&["npx".to_owned(), "--no-install".to_owned()])
        {
            argv.splice(0..2, ["yarn".to_owned()]);
            gate.requires = Some(vec!["yarn".to_owned()]);
        }
    }
    tailored
        .notes
        .push("Yarn Plug'n'Play (.pnp.cjs): the test runner runs through yarn".into());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, file: &str, text: &str) {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_package_manager_comes_from_package_json_then_the_lockfile() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "package.json", "{}");
        assert_eq!(package_manager(dir.path()), (PackageManager::Npm, false));
        write(dir.path(), "pnpm-lock.yaml", "lockfileVersion: '9.0'\n");
        assert_eq!(package_manager(dir.path()), (PackageManager::Pnpm, true));
        write(
            dir.path(),
            "package.json",
            r#"{"packageManager": "yarn@4.1.0+sha224.abc"}"#,
        );
        assert_eq!(
            package_manager(dir.path()),
            (PackageManager::YarnBerry, true)
        );
        write(
            dir.path(),
            "package.json",
            r#"{"packageManager": "yarn@1.22.19"}"#,
        );
        assert_eq!(package_manager(dir.path()).0, PackageManager::YarnClassic);
        let berry = tempfile::tempdir().unwrap();
        write(berry.path(), "yarn.lock", "__metadata:\n  version: 8\n");
        assert_eq!(
            package_manager(berry.path()),
            (PackageManager::YarnBerry, true)
        );
    }

    #[test]
    fn a_pnpm_project_never_gets_npm_install_and_its_lockfile_is_not_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "package.json",
            r#"{"devDependencies": {"vitest": "^3"}}"#,
        );
        write(dir.path(), "pnpm-lock.yaml", "lockfileVersion: '9.0'\n");
        let tailored = super::super::tailor(super::super::TailorInput {
            name: "node-vitest",
            preset: crate::preset::preset_gates("node-vitest").unwrap().unwrap(),
            repo_root: dir.path(),
            file_gates: &[],
        });
        let RawCommand::Shell(line) = &tailored.preset.setup[0].run else {
            panic!("{:?}", tailored.preset.setup);
        };
        assert!(line.contains("pnpm) install --frozen-lockfile"), "{line}");
        assert!(
            !line.contains("npm ci") && !line.contains("npm install "),
            "{line}"
        );
    }

    #[test]
    fn workspace_members_are_found_from_both_declarations() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "package.json",
            r#"{"workspaces": ["packages/*"]}"#,
        );
        write(dir.path(), "packages/a/package.json", "{}");
        write(dir.path(), "packages/b/package.json", "{}");
        write(dir.path(), "packages/a/node_modules/x/package.json", "{}");
        write(dir.path(), "other/c/package.json", "{}");
        let found = workspace_manifests(dir.path());
        assert_eq!(
            found,
            [
                dir.path().join("packages/a/package.json"),
                dir.path().join("packages/b/package.json")
            ]
        );
        let pnpm = tempfile::tempdir().unwrap();
        write(pnpm.path(), "package.json", "{}");
        write(
            pnpm.path(),
            "pnpm-workspace.yaml",
            "packages:\n  - 'libs/**'\n  - '!libs/skip'\n",
        );
        write(pnpm.path(), "libs/deep/one/package.json", "{}");
        assert_eq!(
            workspace_manifests(pnpm.path()),
            [pnpm.path().join("libs/deep/one/package.json")]
        );
    }
}
