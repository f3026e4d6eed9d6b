//! What `meta-agent memory ...` and the shared `hindsight approve|sync` print for people: the
//! memory's status, a migration, an import, approvals and a sync. `--json` forms are the
//! memory's data as they are, written by the command itself.

use std::fmt::Write as _;

use meta_agent_protocol::memory::MemoryStatus;

use super::words::plural_y;

/// The backend and where it is, the schema's version, and the counts.
pub fn status(status: &MemoryStatus) -> String {
    let mut out = format!("backend: {} ({})\n", status.backend, status.location);
    if let (Some(version), Some(known)) = (status.schema_version, status.known_version) {
        let _ = writeln!(
            out,
            "schema: version {version} (this meta-agent knows {known})"
        );
    }
    let _ = writeln!(
        out,
        "hindsight: {} entr{} from {} repositor{}, {} resolution(s), {} reviewed",
        status.entries,
        plural_y(status.entries),
        status.repositories,
        plural_y(status.repositories),
        status.resolutions,
        status.reviewed
    );
    let _ = writeln!(
        out,
        "sessions: {}, conversation messages: {}",
        status.sessions, status.messages
    );
    out
}

/// What `memory migrate` did to the database at `location`: the migrations it applied (none
/// when the schema was up to date) and the schema's version after.
pub fn migrated(location: &str, applied: &[i32], version: i32) -> String {
    if applied.is_empty() {
        return format!("{location}: schema is up to date (version {version})\n");
    }
    let applied: Vec<String> = applied.iter().map(i32::to_string).collect();
    format!(
        "{location}: applied migration(s) {} (schema version {version})\n",
        applied.join(", ")
    )
}

/// One line per approved candidate, as (signature, resolution), with where and by whom.
pub fn approved(approved: &[(&str, &str)], repository: &str, by: &str) -> String {
    approved
        .iter()
        .map(|(signature, resolution)| {
            format!("approved {signature} {resolution} ({repository}, by {by})\n")
        })
        .collect()
}

/// What `hindsight sync` wrote from how many queue files to the database at `location`.
pub fn synced(files: usize, location: &str, written: usize, already: usize) -> String {
    format!(
        "synced {files} queue file(s) to {location}: {written} written, {already} already there\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_commands_as_people_read_them() {
        let database = MemoryStatus {
            backend: "postgres",
            location: "db.internal:5432/meta_agent".into(),
            schema_version: Some(2),
            known_version: Some(2),
            entries: 1,
            resolutions: 3,
            reviewed: 2,
            repositories: 4,
            sessions: 7,
            messages: 41,
        };
        let files = MemoryStatus {
            backend: "files",
            location: ".meta-agent/memory".into(),
            schema_version: None,
            known_version: None,
            entries: 0,
            resolutions: 0,
            reviewed: 0,
            repositories: 1,
            sessions: 0,
            messages: 0,
        };
        insta::assert_snapshot!(
            "memory_texts",
            [
                status(&database),
                status(&files),
                migrated("db.internal:5432/meta_agent", &[], 2),
                migrated("db.internal:5432/meta_agent", &[1, 2], 2),
                approved(
                    &[
                        ("5f0c2a9e81b3d4c7", "5bba85fba19b2cef"),
                        ("0a1b2c3d4e5f6071", "c0ffee")
                    ],
                    "octo/calc",
                    "maintainer"
                ),
                synced(2, "db.internal:5432/meta_agent", 5, 1),
            ]
            .join("---\n")
        );
    }
}
