//! The Go preset adapted to the module: `go vet` with every analyzer runs only where the project
//! shows it runs vet (`go vet` in a Makefile, a justfile or a GitHub workflow, or a golangci-lint
//! configuration); elsewhere `go test` runs vet's high-confidence subset itself, and the
//! stricter analyzers' findings (unkeyed composite literals, struct tags in test tables) are not
//! the project's rules.

use std::path::Path;

use super::{Tailored, read};

/// Files whose mention of `go vet` says the project runs it.
const BUILD_FILES: [&str; 4] = ["Makefile", "makefile", "GNUmakefile", "justfile"];
/// golangci-lint's configuration files (golangci-lint runs vet).
const GOLANGCI_FILES: [&str; 4] = [
    ".golangci.yml",
    ".golangci.yaml",
    ".golangci.toml",
    ".golangci.json",
];

/// Whether the project's files show that it runs `go vet`.
fn runs_vet(root: &Path) -> bool {
    let mentions = |text: String| text.contains("go vet");
    GOLANGCI_FILES.iter().any(|file| root.join(file).is_file())
        || BUILD_FILES
            .iter()
            .any(|file| read(root, file).is_some_and(mentions))
        || workflows(root).into_iter().any(mentions)
}

/// The text of every GitHub workflow.
fn workflows(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join(".github/workflows")) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .collect()
}

pub(super) fn tailor(tailored: &mut Tailored, root: &Path, keep: &dyn Fn(&str) -> bool) {
    if !runs_vet(root) {
        tailored.drop_gate(
            "vet",
            "the project shows no `go vet` run (Makefile, justfile, workflow or golangci-lint \
             configuration); `go test` runs vet's high-confidence checks itself",
            keep,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::{TailorInput, tailor};

    fn gates(root: &std::path::Path) -> Vec<String> {
        tailor(TailorInput {
            name: "go",
            preset: crate::preset::preset_gates("go").unwrap().unwrap(),
            repo_root: root,
            file_gates: &[],
        })
        .preset
        .gates
        .iter()
        .map(|gate| gate.name.as_str().to_owned())
        .collect()
    }

    #[test]
    fn vet_runs_only_where_the_project_runs_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("go.mod"), "module example.com/m\n").unwrap();
        assert_eq!(gates(dir.path()), ["tests"]);
        std::fs::create_dir_all(dir.path().join(".github/workflows")).unwrap();
        std::fs::write(
            dir.path().join(".github/workflows/ci.yml"),
            "jobs:\n  t:\n    steps:\n      - run: go vet ./...\n",
        )
        .unwrap();
        assert_eq!(gates(dir.path()), ["vet", "tests"]);
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("Makefile"), "lint:\n\tgo vet ./...\n").unwrap();
        assert_eq!(gates(other.path()), ["vet", "tests"]);
    }
}
