use std::os::unix::fs::{PermissionsExt, symlink};
use std::time::{Duration, Instant};

use super::*;

/// A worktree with a file, and a directory outside it holding a secret.
struct World {
    root: tempfile::TempDir,
    outside: tempfile::TempDir,
}

fn world() -> World {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("src")).unwrap();
    std::fs::write(root.path().join("src/a.py"), "x = 1\n").unwrap();
    std::fs::write(outside.path().join("secret"), "CANARY").unwrap();
    symlink(outside.path(), root.path().join("out")).unwrap();
    symlink(outside.path().join("secret"), root.path().join("src/link")).unwrap();
    World { root, outside }
}

fn both(world: &World) -> [Beneath; 2] {
    [Resolver::Openat2, Resolver::PerComponent]
        .map(|r| Beneath::open(world.root.path()).unwrap().with_resolver(r))
}

#[test]
fn openat2_is_available_on_this_machine() {
    assert_eq!(Resolver::detect(), Resolver::Openat2);
}

#[test]
fn regular_files_are_read_and_links_never_followed() {
    let world = world();
    for dir in both(&world) {
        assert_eq!(dir.read(Path::new("src/a.py"), 100).unwrap(), b"x = 1\n");
        assert_eq!(dir.read(Path::new("./src//a.py"), 100).unwrap(), b"x = 1\n");
        for linked in ["src/link", "out/secret"] {
            let err = dir.read(Path::new(linked), 100).unwrap_err();
            assert!(matches!(err, FsError::Link { .. }), "{linked}: {err}");
        }
        for bad in [
            "../x",
            "/etc/passwd",
            "",
            "src/../src/a.py",
            ".GIT/config",
            "src/git~1/x",
        ] {
            let err = dir.read(Path::new(bad), 100).unwrap_err();
            assert!(matches!(err, FsError::NotPlain { .. }), "{bad}: {err}");
        }
        let err = dir.read(Path::new("src/a.py"), 3).unwrap_err();
        assert!(matches!(err, FsError::TooLarge { size: 6, .. }), "{err}");
        assert!(matches!(
            dir.read(Path::new("src/none"), 3).unwrap_err(),
            FsError::NotFound { .. }
        ));
    }
}

#[test]
fn a_fifo_is_refused_at_once_and_a_directory_is_not_a_file() {
    let world = world();
    let fifo = world.root.path().join("src/pipe");
    nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o644)).unwrap();
    for dir in both(&world) {
        let started = Instant::now();
        let err = dir.read(Path::new("src/pipe"), 100).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(err.to_string().contains("a FIFO"), "{err}");
        let err = dir.read(Path::new("src"), 100).unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
    }
}

#[test]
fn hard_links_are_refused() {
    let world = world();
    let outside = world.outside.path().join("secret");
    if std::fs::hard_link(&outside, world.root.path().join("hard")).is_err() {
        eprintln!("SKIPPED: the temporary directories are on different filesystems");
        return;
    }
    let dir = Beneath::open(world.root.path()).unwrap();
    let err = dir.read(Path::new("hard"), 100).unwrap_err();
    assert!(matches!(err, FsError::HardLinked { .. }), "{err}");
}

#[test]
fn deep_and_long_paths_are_refused_with_their_numbers() {
    let world = world();
    let dir = Beneath::open(world.root.path()).unwrap();
    let deep = "a/".repeat(150) + "f";
    let err = dir.write(Path::new(&deep), b"x", false).unwrap_err();
    assert!(
        matches!(
            err,
            FsError::TooDeep {
                depth: 151,
                max: 40,
                ..
            }
        ),
        "{err}"
    );
    let long = "x".repeat(2000);
    let err = dir.read(Path::new(&long), 1).unwrap_err();
    assert!(matches!(err, FsError::TooLong { len: 2000, .. }), "{err}");
    assert!(!world.root.path().join("a").exists());
}

#[test]
fn writes_replace_links_and_never_write_through_them() {
    let world = world();
    for (index, dir) in both(&world).into_iter().enumerate() {
        let err = dir
            .write(Path::new("out/planted"), b"x", false)
            .unwrap_err();
        assert!(matches!(err, FsError::Link { .. }), "{err}");
        let name = format!("src/link{index}");
        symlink(
            world.outside.path().join("secret"),
            world.root.path().join(&name),
        )
        .unwrap();
        dir.write(Path::new(&name), b"replaced", false).unwrap();
        let meta = std::fs::symlink_metadata(world.root.path().join(&name)).unwrap();
        assert!(meta.is_file());
        dir.write(Path::new("new/deeper/f.txt"), b"made", true)
            .unwrap();
    }
    let secret = std::fs::read_to_string(world.outside.path().join("secret")).unwrap();
    assert_eq!(secret, "CANARY");
    assert_eq!(std::fs::read_dir(world.outside.path()).unwrap().count(), 1);
    let made = std::fs::read_to_string(world.root.path().join("new/deeper/f.txt")).unwrap();
    assert_eq!(made, "made");
    let leftovers: Vec<_> = std::fs::read_dir(world.root.path().join("src"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".meta-agent-tmp")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_rewritten_file_keeps_its_permissions() {
    let world = world();
    let script = world.root.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = Beneath::open(world.root.path()).unwrap();
    dir.write(Path::new("run.sh"), b"#!/bin/sh\necho hi\n", false)
        .unwrap();
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[test]
fn removal_never_descends_through_a_link() {
    let world = world();
    std::fs::create_dir_all(world.root.path().join("tree/sub")).unwrap();
    std::fs::write(world.root.path().join("tree/sub/f"), "x").unwrap();
    symlink(world.outside.path(), world.root.path().join("tree/sub/out")).unwrap();
    let dir = Beneath::open(world.root.path()).unwrap();
    dir.remove(Path::new("tree")).unwrap();
    dir.remove(Path::new("out")).unwrap();
    dir.remove(Path::new("never/was")).unwrap();
    assert!(!world.root.path().join("tree").exists());
    assert!(std::fs::symlink_metadata(world.root.path().join("out")).is_err());
    assert!(world.outside.path().join("secret").exists());
    assert_eq!(
        dir.kind(Path::new("src/link")).unwrap(),
        Some(EntryKind::Link)
    );
    assert_eq!(
        dir.kind(Path::new("src")).unwrap(),
        Some(EntryKind::Directory)
    );
    assert_eq!(dir.kind(Path::new("src/none")).unwrap(), None);
}
