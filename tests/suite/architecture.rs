//! The layers as the code imports them (#26): no import cycle between the top-level modules of
//! any crate of the workspace, no crate under `crates/` reaching up into the main one, the floor
//! crate (`crates/protocol`) naming no other crate of the workspace, and the renderers
//! (`crates/render`) standing on the floor alone. Read from the sources as they are: a
//! `crate::X` path in module `Y` (outside a comment), or a `super::…::X` path that climbs from
//! `Y` to the crate's root, is an edge `Y → X`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The top-level modules of `src/` (a file `x.rs` or a directory `x/`), without the roots and
/// a crate's test-only `tests` module.
fn top_level_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            match name.strip_suffix(".rs") {
                Some("lib" | "main" | "tests") => None,
                Some(module) => Some(module.to_owned()),
                None if entry.path().is_dir() && name != "tests" && name != "snapshots" => {
                    Some(name)
                }
                None => None,
            }
        })
        .collect()
}

/// The module path of a source file below `src` (`a/b.rs` and `a/b/mod.rs` are `[a, b]`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    parts
}

/// The top-level module a path written in `file` names, if any: `crate::X…`, or `super::X…`
/// climbing (once or more) from the file's module up to the crate's root.
fn top_level_named(rest: &str, climbed_to_root: bool) -> Option<String> {
    if !climbed_to_root {
        return None;
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The modules each `crate::X` or root-reaching `super::X` path outside comments in `files`
/// names.
fn named_modules(src: &Path, files: &[PathBuf], modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for file in files {
        let depth = module_path(src, file).len();
        let text = std::fs::read_to_string(file).unwrap();
        let mut previous = "";
        for line in text.lines() {
            // A file's unit tests (`#[cfg(test)] mod tests` at its end) are not the layering.
            if previous.trim() == "#[cfg(test)]" && line.trim_start().starts_with("mod tests") {
                break;
            }
            previous = line;
            let code = line.split("//").next().unwrap_or_default();
            for (at, _) in code.match_indices("crate::") {
                let preceded = code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
                if let Some(name) = top_level_named(&code[at + "crate::".len()..], !preceded) {
                    named.insert(name);
                }
            }
            for (at, _) in code.match_indices("super::") {
                if code[..at].ends_with("super::") {
                    continue;
                }
                let mut rest = &code[at..];
                let mut climbs = 0;
                while let Some(after) = rest.strip_prefix("super::") {
                    rest = after;
                    climbs += 1;
                }
                // From `a/b.rs` (module a::b) one `super` reaches `a`, two reach the root.
                if let Some(name) = top_level_named(rest, climbs >= depth) {
                    named.insert(name);
                }
            }
        }
    }
    named.retain(|name| modules.contains(name));
    named
}

/// Module → the modules it imports.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = top_level_modules(src);
    modules
        .iter()
        .map(|module| {
            // A module is its file (`x.rs`), its directory (`x/`), or both (`x.rs` with its
            // submodules in `x/`).
            let dir = src.join(module);
            let file = src.join(format!("{module}.rs"));
            let mut files = if dir.is_dir() {
                rust_files(&dir)
            } else {
                Vec::new()
            };
            if file.is_file() {
                files.push(file);
            }
            let mut named = named_modules(src, &files, &modules);
            named.remove(module);
            (module.clone(), named)
        })
        .collect()
}

/// A cycle of `graph`, if it has one (depth-first search; the path back to the repeated node).
fn a_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_top_level_modules_import_each_other_without_a_cycle() {
    let graph = import_graph(&root().join("src"));
    assert!(graph.len() >= 3, "the modules were read: {graph:?}");
    assert!(
        graph["cli"].contains("session") && graph["session"].contains("exit"),
        "edges are seen: {graph:?}"
    );
    assert_eq!(a_cycle(&graph), None, "an import cycle");
}

#[test]
fn no_crate_s_top_level_modules_import_each_other_in_a_cycle() {
    let mut read = 0;
    for dir in crate_dirs() {
        let graph = import_graph(&dir.join("src"));
        read += graph.len();
        assert_eq!(
            a_cycle(&graph),
            None,
            "an import cycle in {}",
            dir.display()
        );
    }
    assert!(read > 100, "the crates' modules were read: {read}");
}

/// The engine's units (the change guard, the observer, the committer, and the worktree helpers
/// they share) name neither the engine (`machine`) nor its steps (`run`): a unit holds only the
/// parts it is given.
#[test]
fn the_engine_s_units_name_neither_the_engine_nor_its_steps() {
    let graph = import_graph(&root().join("crates/engine/src"));
    assert!(
        graph["machine"].contains("commit") && graph["run"].contains("machine"),
        "edges are seen: {graph:?}"
    );
    for unit in ["commit", "guard", "observe", "worktree"] {
        let named = &graph[unit];
        assert!(
            !named.contains("machine") && !named.contains("run"),
            "{unit} names {named:?}"
        );
    }
}

/// A module written as `x.rs` with its submodules in `x/` is read whole: an import in either
/// counts.
#[test]
fn a_module_s_file_and_its_directory_both_count() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(src.join("a.rs"), "mod part;\nuse crate::b::X;\n").unwrap();
    std::fs::write(src.join("a/part.rs"), "use crate::c::Y;\n").unwrap();
    std::fs::write(src.join("b.rs"), "pub struct X;\n").unwrap();
    std::fs::write(src.join("c.rs"), "pub struct Y;\n").unwrap();
    let graph = import_graph(src);
    assert_eq!(graph["a"], BTreeSet::from(["b".to_owned(), "c".to_owned()]));
}

#[test]
fn an_edge_through_super_to_the_root_counts() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("a/mod.rs"), "use super::b::x;\n").unwrap();
    std::fs::write(
        src.join("a/inner.rs"),
        "use super::super::c::y;\nuse super::z;\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "// use crate::a;\nfn f() {}\n").unwrap();
    std::fs::write(
        src.join("c.rs"),
        "use crate::b;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
    )
    .unwrap();
    let graph = import_graph(src);
    assert_eq!(graph["a"], ["b", "c"].map(str::to_owned).into());
    assert!(graph["b"].is_empty(), "a comment is no edge: {graph:?}");
    assert_eq!(
        graph["c"],
        ["b"].map(str::to_owned).into(),
        "unit tests are no edge"
    );
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(node, to)| (node.to_owned(), to.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        a_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn the_crates_below_the_main_one_never_reach_up_into_it() {
    let crates = crate_dirs();
    assert!(crates.len() >= 2, "{crates:?}");
    for dir in crates {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            workspace_dependencies(&manifest).all(|name| name != "meta-agent-ci"),
            "{manifest}"
        );
        for file in rust_files(&dir.join("src")) {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                !text.contains("meta_agent::"),
                "{} reaches up into the main crate",
                file.display()
            );
        }
    }
    let floor = std::fs::read_to_string(root().join("crates/protocol/Cargo.toml")).unwrap();
    assert_eq!(
        workspace_dependencies(&floor).count(),
        0,
        "the floor depends on no crate of the workspace: {floor}"
    );
    let main = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(
        workspace_dependencies(&main).any(|name| name == "meta-agent-protocol"),
        "the reading sees a dependency: {main}"
    );
}

#[test]
fn the_renderers_stand_on_the_floor_alone() {
    // Every text people read is a function of the records the floor defines: render names no
    // layer, so any layer may use it and none can make it reach into another's internals.
    let dir = root().join("crates/render");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let named: Vec<&str> = workspace_dependencies(&manifest).collect();
    assert_eq!(named, ["meta-agent-protocol"], "{manifest}");
    for file in rust_files(&dir.join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("meta_agent_") {
            assert!(
                text[at..].starts_with("meta_agent_protocol"),
                "{} names another crate of the workspace",
                file.display()
            );
        }
    }
}

/// Every crate under `crates/`.
fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The workspace crates a manifest depends on (its `meta-agent-*` dependency keys).
fn workspace_dependencies(manifest: &str) -> impl Iterator<Item = &str> {
    manifest.lines().filter_map(|line| {
        let key = line.split('=').next()?.trim();
        (key.starts_with("meta-agent-") && line.contains("path")).then_some(key)
    })
}
