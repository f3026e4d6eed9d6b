//! Tests of the pristine verification: the candidate tree checked out clean and judged by the gates.

use super::*;

#[test]
fn a_copy_keeps_times_and_links_and_never_follows_them() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "outside").unwrap();
    let from = dir.path().join("target");
    std::fs::create_dir_all(from.join("debug/deps")).unwrap();
    std::fs::write(from.join("debug/deps/libx.rlib"), "rlib").unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    File::options()
        .write(true)
        .open(from.join("debug/deps/libx.rlib"))
        .unwrap()
        .set_times(fs::FileTimes::new().set_modified(old))
        .unwrap();
    std::os::unix::fs::symlink(outside.path(), from.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), from.join("file-link")).unwrap();
    let to = dir.path().join("seed/target");
    copy_entry(&from, &to).unwrap();
    let copied = to.join("debug/deps/libx.rlib");
    assert_eq!(std::fs::read_to_string(&copied).unwrap(), "rlib");
    assert_eq!(std::fs::metadata(&copied).unwrap().modified().unwrap(), old);
    assert!(same_entry(&from.join("debug/deps/libx.rlib"), &copied));
    for link in ["out", "file-link"] {
        let meta = std::fs::symlink_metadata(to.join(link)).unwrap();
        assert!(meta.file_type().is_symlink(), "{link} stays a link");
    }
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        1,
        "nothing written through a link"
    );
}

#[test]
fn a_changed_or_new_file_is_not_the_seeded_one() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.pyc");
    std::fs::write(&a, "one").unwrap();
    let seeded = dir.path().join("seed.pyc");
    copy_file(&a, &seeded).unwrap();
    assert!(same_entry(&a, &seeded));
    std::fs::write(&a, "two!").unwrap();
    assert!(!same_entry(&a, &seeded));
    assert!(!same_entry(&a, &dir.path().join("missing")));
}

#[test]
fn only_plain_relative_paths_are_copied() {
    assert!(plain("target"));
    assert!(plain("sub/node_modules"));
    assert!(!plain(""));
    assert!(!plain("/etc"));
    assert!(!plain("../x"));
}
