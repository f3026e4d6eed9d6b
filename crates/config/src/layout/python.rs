//! The Python preset adapted to the project: ruff only where the project configured it, the
//! worktree's `src/` first on the import path for a `src/` layout, the project's own virtual
//! environment (`.venv`, made by `uv sync` or `poetry install` in the setup phase) when it has
//! one, and where pytest's configuration lives.

use std::path::Path;

use super::toml_tables::has_table;
use super::{Tailored, read};
use crate::raw::{RawCommand, RawSetup};

/// The files that configure ruff besides `[tool.ruff]` in `pyproject.toml`.
const RUFF_FILES: [&str; 2] = ["ruff.toml", ".ruff.toml"];
/// The project's virtual environment's interpreter, relative to the root.
const VENV_PYTHON: &str = ".venv/bin/python";

/// What the project's files say.
#[derive(Debug, Default)]
struct PythonLayout {
    ruff_configured: bool,
    src_layout: bool,
    /// Where pytest is configured (`pyproject.toml [tool.pytest.ini_options]`, ...).
    pytest_config: Option<&'static str>,
    manager: Option<Manager>,
    has_venv: bool,
}

/// The tool that manages the project's environment, by its lockfile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Manager {
    Uv,
    Poetry,
}

impl Manager {
    /// The setup command that makes `.venv` from the lockfile, as locked.
    fn setup(self) -> RawSetup {
        let (run, env) = match self {
            Manager::Uv => (vec!["uv", "sync", "--frozen"], None),
            Manager::Poetry => (
                vec!["poetry", "install", "--no-interaction"],
                Some(
                    [(
                        "POETRY_VIRTUALENVS_IN_PROJECT".to_owned(),
                        "true".to_owned(),
                    )]
                    .into_iter()
                    .collect(),
                ),
            ),
        };
        RawSetup {
            run: RawCommand::Argv(run.into_iter().map(str::to_owned).collect()),
            workdir: None,
            timeout: None,
            env,
            credentials: None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Manager::Uv => "uv project (uv.lock): setup runs `uv sync --frozen`",
            Manager::Poetry => "Poetry project (poetry.lock): setup runs `poetry install`",
        }
    }
}

fn read_layout(root: &Path) -> PythonLayout {
    let pyproject = read(root, "pyproject.toml").unwrap_or_default();
    let manager = if root.join("uv.lock").is_file() {
        Some(Manager::Uv)
    } else if root.join("poetry.lock").is_file() {
        Some(Manager::Poetry)
    } else {
        None
    };
    PythonLayout {
        ruff_configured: has_table(&pyproject, "tool.ruff")
            || RUFF_FILES.iter().any(|file| root.join(file).is_file()),
        src_layout: src_layout(&root.join("src")),
        pytest_config: pytest_config(root, &pyproject),
        manager,
        has_venv: root.join(VENV_PYTHON).exists(),
    }
}

/// `src/` holds a package or a module.
fn src_layout(src: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(src) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let path = entry.path();
        path.join("__init__.py").is_file()
            || path.extension().is_some_and(|ext| ext == "py") && path.is_file()
    })
}

/// Where pytest reads its configuration, in pytest's own order of precedence.
fn pytest_config(root: &Path, pyproject: &str) -> Option<&'static str> {
    let section = |file: &str, header: &str| {
        read(root, file).is_some_and(|text| text.lines().any(|line| line.trim() == header))
    };
    if root.join("pytest.ini").is_file() {
        Some("pytest.ini")
    } else if root.join(".pytest.ini").is_file() {
        Some(".pytest.ini")
    } else if has_table(pyproject, "tool.pytest.ini_options") {
        Some("pyproject.toml [tool.pytest.ini_options]")
    } else if section("tox.ini", "[pytest]") {
        Some("tox.ini [pytest]")
    } else if section("setup.cfg", "[tool:pytest]") {
        Some("setup.cfg [tool:pytest]")
    } else {
        None
    }
}

pub(super) fn tailor(tailored: &mut Tailored, root: &Path, keep: &dyn Fn(&str) -> bool) {
    let layout = read_layout(root);
    if !layout.ruff_configured {
        tailored.drop_gate(
            "lint",
            "the project configures no ruff (ruff.toml, .ruff.toml or [tool.ruff] in \
             pyproject.toml), so its findings are not the project's rules",
            keep,
        );
    }
    if let Some(config) = layout.pytest_config {
        tailored
            .notes
            .push(format!("pytest configured in {config}"));
    }
    if let Some(manager) = layout.manager {
        tailored.preset.setup = vec![manager.setup()];
        tailored.notes.push(manager.describe().to_owned());
    }
    if layout.has_venv || layout.manager.is_some() {
        use_venv(tailored);
    }
    if layout.src_layout {
        src_first(tailored);
    }
}

/// The tests gate runs the project's `.venv` interpreter instead of the `python3` on PATH.
fn use_venv(tailored: &mut Tailored) {
    let Some(gate) = tailored.gate_mut("tests") else {
        return;
    };
    let swap = |argv: &mut Vec<String>| {
        if argv.first().is_some_and(|program| program == "python3") {
            argv[0] = VENV_PYTHON.to_owned();
        }
    };
    if let Some(RawCommand::Argv(argv)) = &mut gate.run {
        swap(argv);
    }
    if let Some(rerun) = &mut gate.rerun_failed {
        swap(&mut rerun.run);
    }
    gate.requires = None;
    tailored
        .notes
        .push(format!("tests run with the project's {VENV_PYTHON}"));
}

/// `src/` first on the import path, so the tests import the worktree's code (not a copy
/// installed elsewhere, nor nothing at all).
fn src_first(tailored: &mut Tailored) {
    let Some(gate) = tailored.gate_mut("tests") else {
        return;
    };
    let env = gate.env.get_or_insert_with(Default::default);
    if env.contains_key("PYTHONPATH") {
        return;
    }
    env.insert("PYTHONPATH".into(), "src".into());
    tailored
        .notes
        .push("src/ layout: the tests import the worktree's src/ first (PYTHONPATH=src)".into());
}

#[cfg(test)]
mod tests {
    use super::super::{TailorInput, tailor};
    use crate::preset::preset_gates;
    use std::path::Path;

    fn python(root: &Path) -> super::Tailored {
        tailor(TailorInput {
            name: "python",
            preset: preset_gates("python").unwrap().unwrap(),
            repo_root: root,
            file_gates: &[],
        })
    }

    fn names(tailored: &super::Tailored) -> Vec<&str> {
        tailored
            .preset
            .gates
            .iter()
            .map(|g| g.name.as_str())
            .collect()
    }

    #[test]
    fn ruff_runs_only_where_the_project_configured_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[project]\nname = \"x\"\n",
        )
        .unwrap();
        let plain = python(dir.path());
        assert_eq!(names(&plain), ["tests"]);
        assert!(
            plain.notes[0].contains("configures no ruff"),
            "{:?}",
            plain.notes
        );
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[project]\nname = \"x\"\n[tool.ruff.lint]\nselect = [\"E\"]\n",
        )
        .unwrap();
        assert_eq!(names(&python(dir.path())), ["lint", "tests"]);
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("ruff.toml"), "line-length = 90\n").unwrap();
        assert_eq!(names(&python(other.path())), ["lint", "tests"]);
    }

    #[test]
    fn a_gate_the_file_names_is_never_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let file_gate: crate::raw::RawGate =
            serde_yaml::from_str("name: lint\nfail_on: warning\n").unwrap();
        let tailored = tailor(TailorInput {
            name: "python",
            preset: preset_gates("python").unwrap().unwrap(),
            repo_root: dir.path(),
            file_gates: &[file_gate],
        });
        assert_eq!(names(&tailored), ["lint", "tests"]);
    }

    #[test]
    fn a_src_layout_puts_src_first_and_a_locked_project_uses_its_venv() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
        std::fs::write(dir.path().join("src/pkg/__init__.py"), "").unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[tool.pytest.ini_options]\naddopts = \"-q\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("uv.lock"), "version = 1\n").unwrap();
        let tailored = python(dir.path());
        let tests = &tailored.preset.gates[0];
        assert_eq!(tests.env.as_ref().unwrap()["PYTHONPATH"], "src");
        match &tests.run {
            Some(crate::raw::RawCommand::Argv(argv)) => {
                assert_eq!(argv[0], ".venv/bin/python")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            tests.rerun_failed.as_ref().unwrap().run[0],
            ".venv/bin/python"
        );
        assert_eq!(tailored.preset.setup.len(), 1);
        assert!(
            tailored
                .notes
                .iter()
                .any(|n| n == "pytest configured in pyproject.toml [tool.pytest.ini_options]"),
            "{:?}",
            tailored.notes
        );
    }

    #[test]
    fn pytest_configuration_is_found_in_tox_ini_and_setup_cfg() {
        for (file, text, expected) in [
            (
                "tox.ini",
                "[tox]\n[pytest]\naddopts = -q\n",
                "tox.ini [pytest]",
            ),
            (
                "setup.cfg",
                "[metadata]\n[tool:pytest]\n",
                "setup.cfg [tool:pytest]",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(file), text).unwrap();
            let notes = python(dir.path()).notes;
            assert!(
                notes.contains(&format!("pytest configured in {expected}")),
                "{notes:?}"
            );
        }
    }
}
