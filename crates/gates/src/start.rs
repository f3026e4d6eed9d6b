//! Whether a gate could start: the pure classification of a gate run that judged nothing about
//! the code because its command never really ran (a program or test runner not installed, a
//! path the sandbox hides), from facts wherever facts exist:
//!
//! - the supervisor could not start the program (a spawn error), or it lies where the sandbox
//!   hides it;
//! - the shell could not find (127) or execute (126) the command;
//! - before any report showed anything run, the command was denied a path outside what the
//!   sandbox lets commands read (the roots the supervisor gives Landlock,
//!   [`meta_agent_exec::isolate::visible_roots`]);
//! - no report showed anything run, and the tool says the runner the gate names is missing (the
//!   one place where words are read: `No module named pytest` for `python -m pytest`, npx's
//!   missing package, cargo's unknown subcommand, node's missing script).
//!
//! A gate whose reports show tests ran started, whatever its output says. The table of real
//! outputs these rules were written against is `fixtures/cannot-start/` (its tests below). No
//! I/O here: the runner gathers the facts.

use std::path::{Path, PathBuf};

use meta_agent_exec::Termination;
use meta_agent_protocol::records::GateProblem;

/// Characters of a tool's error line kept.
const ERROR_CHARS: usize = 300;

/// What the gate's reports say about whether its command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reports {
    /// A report shows the command ran (a test case, a SARIF run, a coverage total).
    Ran,
    /// Reports were expected and none shows anything ran (missing, unreadable, or no test).
    Silent,
    /// The gate writes no report: only its exit and output tell.
    NotConfigured,
}

impl Reports {
    /// What the reports a gate run left say.
    pub fn of(evidence: &super::verdict::Evidence) -> Reports {
        use super::verdict::ReportEvidence::{NotConfigured, Parsed};
        let ran = matches!(&evidence.junit, Parsed(summary) if summary.tests > 0)
            || matches!(evidence.coverage, Parsed(_))
            || matches!(evidence.sarif, Parsed(_));
        let expected = !matches!(evidence.junit, NotConfigured)
            || !matches!(evidence.coverage, NotConfigured)
            || !matches!(evidence.sarif, NotConfigured);
        match (ran, expected) {
            (true, _) => Reports::Ran,
            (false, true) => Reports::Silent,
            (false, false) => Reports::NotConfigured,
        }
    }
}

/// Where a command may read, as the supervisor confines it.
#[derive(Debug, Clone, Copy)]
pub struct Visible<'a> {
    /// [`meta_agent_exec::isolate::visible_roots`] of the command.
    pub roots: &'a [PathBuf],
    /// The temporary directory, where each command's own home and `TMPDIR` are made.
    pub temp: &'a Path,
}

impl Visible<'_> {
    /// Whether the sandbox hides `path` from the command.
    pub fn hides(&self, path: &Path) -> bool {
        !self.roots.iter().any(|root| path.starts_with(root))
            && !meta_agent_exec::home::in_scratch(path, self.temp)
    }
}

/// Everything observed about one gate run that says whether it started.
#[derive(Debug, Clone, Copy)]
pub struct StartFacts<'a> {
    pub termination: &'a Termination,
    /// The program and its arguments as run (`/bin/sh -c LINE` for a shell string).
    pub argv: &'a [String],
    /// The command's output: stderr, then stdout, without escape sequences.
    pub log: &'a str,
    pub reports: Reports,
    /// Where the command could read; `None` when reads were not confined (no Landlock): then
    /// no denial is the sandbox's.
    pub visible: Option<Visible<'a>>,
}

/// The problem the facts show, if the gate could not start (or timed out).
pub fn classify(facts: &StartFacts<'_>) -> Option<GateProblem> {
    match facts.termination {
        Termination::NotStarted { reason } => return Some(not_started(facts, reason)),
        Termination::TimedOut => return Some(GateProblem::TimedOut),
        Termination::Exited { code: 0 } | Termination::Cancelled => return None,
        Termination::Exited { .. } | Termination::Signaled { .. } => {}
    }
    if facts.reports == Reports::Ran {
        return None;
    }
    if let Some(problem) = hidden_path(facts) {
        return Some(problem);
    }
    if let Termination::Exited {
        code: code @ (126 | 127),
    } = facts.termination
    {
        return Some(GateProblem::BadCommand {
            code: *code,
            error: shell_error(facts.log),
        });
    }
    missing_runner(facts)
}

/// A spawn error: the program hidden by the sandbox (an absolute path outside what it allows),
/// or otherwise not startable.
fn not_started(facts: &StartFacts<'_>, reason: &str) -> GateProblem {
    let program = facts.argv.first().map(Path::new);
    let hidden = program
        .filter(|program| program.is_absolute())
        .filter(|program| facts.visible.is_some_and(|visible| visible.hides(program)));
    match hidden {
        Some(program) => GateProblem::PathHidden {
            path: program.display().to_string(),
            error: bounded(reason),
            grant: None,
        },
        None => GateProblem::CouldNotStart {
            reason: reason.to_owned(),
        },
    }
}

/// The first path the log says was denied that the sandbox hides.
fn hidden_path(facts: &StartFacts<'_>) -> Option<GateProblem> {
    let visible = facts.visible?;
    let (path, line) = denied_paths(facts.log)
        .into_iter()
        .find(|(path, _)| visible.hides(path))?;
    Some(GateProblem::PathHidden {
        path: path.display().to_string(),
        error: bounded(line),
        grant: None,
    })
}

/// Words that mark a line as a denial of access (EACCES, in any tool's spelling).
const DENIALS: [&str; 2] = ["permission denied", "eacces"];

/// The absolute paths named on lines that report a denial of access, each with its line, in
/// order. A path ends at whitespace, a quote, a bracket, a comma, a semicolon or a colon.
pub fn denied_paths(log: &str) -> Vec<(PathBuf, &str)> {
    log.lines()
        .filter(|line| {
            let lower = line.to_ascii_lowercase();
            DENIALS.iter().any(|word| lower.contains(word))
        })
        .flat_map(|line| {
            absolute_paths(line)
                .into_iter()
                .map(move |path| (path, line.trim()))
        })
        .collect()
}

/// Characters a path in a message starts after.
const PATH_OPENERS: [char; 9] = [' ', '\t', '\'', '"', '`', '(', '[', '=', ':'];
/// Characters that end a path in a message.
const PATH_CLOSERS: [char; 10] = [' ', '\t', '\'', '"', '`', ')', ']', ',', ';', ':'];

/// Every absolute path in `line`: a `/` at the start or after an opener, up to a closer.
fn absolute_paths(line: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut previous: Option<char> = None;
    for (index, c) in line.char_indices() {
        let starts = c == '/' && previous.is_none_or(|p| PATH_OPENERS.contains(&p));
        previous = Some(c);
        if !starts {
            continue;
        }
        let rest = &line[index..];
        let end = rest.find(PATH_CLOSERS).unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches('.');
        if path.len() > 1 {
            found.push(PathBuf::from(path));
        }
    }
    found
}

/// The shell's own line about the command it could not find or run, else the last line.
fn shell_error(log: &str) -> String {
    const SHELL_WORDS: [&str; 4] = [
        "not found",
        "permission denied",
        "cannot execute",
        "no such file",
    ];
    let lines = || log.lines().map(str::trim).filter(|line| !line.is_empty());
    let line = lines()
        .rfind(|line| {
            let lower = line.to_ascii_lowercase();
            SHELL_WORDS.iter().any(|word| lower.contains(word))
        })
        .or_else(|| lines().next_back())
        .unwrap_or("");
    bounded(line)
}

/// The runner the gate names, when the tool says that runner is missing.
fn missing_runner(facts: &StartFacts<'_>) -> Option<GateProblem> {
    let words = command_words(facts.argv);
    let program = words.first().map(|first| {
        Path::new(first)
            .file_name()
            .map_or(first.as_str(), |name| name.to_str().unwrap_or(""))
    })?;
    let found = match program {
        "npx" => npx_missing(&words, facts.log),
        "cargo" => cargo_missing(&words, facts.log),
        "node" | "nodejs" => node_missing(&words, facts.log),
        _ => python_missing(&words, facts.log),
    };
    found.map(|(runner, line)| GateProblem::RunnerMissing {
        runner,
        error: bounded(line),
    })
}

/// The command's words: the argv, or a shell string split at whitespace (enough to name a
/// runner; never executed).
fn command_words(argv: &[String]) -> Vec<String> {
    match argv {
        [shell, flag, line] if shell.ends_with("/sh") && flag == "-c" => {
            line.split_whitespace().map(str::to_owned).collect()
        }
        _ => argv.to_vec(),
    }
}

/// The first word after `from` that is not an option.
fn first_operand(words: &[String], from: usize) -> Option<&str> {
    words
        .iter()
        .skip(from)
        .map(String::as_str)
        .find(|word| !word.starts_with(['-', '+']))
}

/// `python -m RUNNER` and `No module named RUNNER` (quoted or not, or a submodule of it).
fn python_missing<'l>(words: &[String], log: &'l str) -> Option<(String, &'l str)> {
    let module = words
        .iter()
        .position(|word| word == "-m")
        .and_then(|at| words.get(at + 1))?;
    let runner = module.split('.').next().unwrap_or(module);
    let line = log.lines().find(|line| {
        line.split_once("No module named ")
            .is_some_and(|(_, named)| {
                let named = named.trim().trim_matches(['\'', '"']);
                named == runner || named.starts_with(&format!("{runner}."))
            })
    })?;
    Some((runner.to_owned(), line.trim()))
}

/// `npx [options] RUNNER` and npx's refusal to run a package that is not installed.
fn npx_missing<'l>(words: &[String], log: &'l str) -> Option<(String, &'l str)> {
    let runner = first_operand(words, 1)?;
    let quoted = [format!("\"{runner}@"), format!("\"{runner}\"")];
    let line = log.lines().find(|line| {
        line.contains("npx canceled due to missing packages")
            && quoted.iter().any(|name| line.contains(name.as_str()))
    })?;
    Some((runner.to_owned(), line.trim()))
}

/// `cargo SUBCOMMAND` and cargo's `no such command`.
fn cargo_missing<'l>(words: &[String], log: &'l str) -> Option<(String, &'l str)> {
    let sub = first_operand(words, 1)?;
    let said = format!("no such command: `{sub}`");
    let line = log.lines().find(|line| line.contains(&said))?;
    Some((format!("cargo {sub}"), line.trim()))
}

/// `node SCRIPT` and node's `Cannot find module` naming that script.
fn node_missing<'l>(words: &[String], log: &'l str) -> Option<(String, &'l str)> {
    let script = first_operand(words, 1)?;
    let tail = script.trim_start_matches("./");
    let line = log.lines().find(|line| {
        line.split_once("Cannot find module ")
            .is_some_and(|(_, named)| named.trim().trim_matches(['\'', '"']).ends_with(tail))
    })?;
    Some((script.to_owned(), line.trim()))
}

/// A line of a tool's output, cut to [`ERROR_CHARS`].
fn bounded(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the captured commands could read: the capture's checkout, its report directory,
    /// the system and the toolchains (as `visible_roots` gave them there).
    const ROOTS: [&str; 9] = [
        "/var/tmp/limits-cap",
        "/var/tmp/limits-cap3",
        "/tmp/meta-agent-reports-gJNTNP",
        "/usr",
        "/bin",
        "/lib",
        "/etc",
        "/root/.pyenv",
        "/root/.cargo",
    ];

    fn fixture(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/cannot-start")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn exited(code: i32) -> Termination {
        Termination::Exited { code }
    }

    fn classified(
        termination: &Termination,
        words: &[&str],
        log: &str,
        reports: Reports,
    ) -> Option<GateProblem> {
        let roots: Vec<PathBuf> = ROOTS.iter().map(PathBuf::from).collect();
        let argv = argv(words);
        classify(&StartFacts {
            termination,
            argv: &argv,
            log,
            reports,
            visible: Some(Visible {
                roots: &roots,
                temp: Path::new("/tmp"),
            }),
        })
    }

    fn hidden(path: &str, error: &str) -> Option<GateProblem> {
        Some(GateProblem::PathHidden {
            path: path.to_owned(),
            error: error.to_owned(),
            grant: None,
        })
    }

    /// The table: each real output (`fixtures/cannot-start/`), the command and ending it came
    /// with, and the classification.
    #[test]
    fn real_outputs_are_classified_from_facts() {
        let python = ["/tmp/limits-exp/venv/bin/python", "-m", "pytest"];
        let pyvenv =
            "PermissionError: [Errno 13] Permission denied: '/tmp/limits-exp/venv/pyvenv.cfg'";
        assert_eq!(
            classified(
                &exited(1),
                &python,
                &fixture("venv-under-tmp.log"),
                Reports::Silent
            ),
            hidden("/tmp/limits-exp/venv/pyvenv.cfg", pyvenv)
        );
        let home = ["/root/limits-venv/bin/python", "-m", "pytest"];
        assert_eq!(
            classified(
                &exited(1),
                &home,
                &fixture("venv-under-home.log"),
                Reports::NotConfigured
            ),
            hidden(
                "/root/limits-venv/pyvenv.cfg",
                "PermissionError: [Errno 13] Permission denied: '/root/limits-venv/pyvenv.cfg'"
            )
        );
        let copied = [".venv/bin/pytest", "tests"];
        assert_eq!(
            classified(
                &exited(1),
                &copied,
                &fixture("copied-venv-script.log"),
                Reports::Silent
            ),
            hidden(
                "/var/tmp/limits-cap2/.venv/pyvenv.cfg",
                "PermissionError: [Errno 13] Permission denied: '/var/tmp/limits-cap2/.venv/pyvenv.cfg'"
            )
        );
        let sh = |line: &str| ["/bin/sh".to_owned(), "-c".to_owned(), line.to_owned()];
        let not_found = sh("nosuchprogram-xyz --flag");
        let not_found: Vec<&str> = not_found.iter().map(String::as_str).collect();
        assert_eq!(
            classified(
                &exited(127),
                &not_found,
                &fixture("sh-not-found.log"),
                Reports::NotConfigured
            ),
            Some(GateProblem::BadCommand {
                code: 127,
                error: "/bin/sh: 1: nosuchprogram-xyz: not found".to_owned()
            })
        );
        let not_executable = sh("./pyproject.toml");
        let not_executable: Vec<&str> = not_executable.iter().map(String::as_str).collect();
        assert_eq!(
            classified(
                &exited(126),
                &not_executable,
                &fixture("sh-not-executable.log"),
                Reports::NotConfigured
            ),
            Some(GateProblem::BadCommand {
                code: 126,
                error: "/bin/sh: 1: ./pyproject.toml: Permission denied".to_owned()
            })
        );
        let no_pytest = [".venv/bin/python", "-m", "pytest", "--junitxml=x"];
        assert_eq!(
            classified(
                &exited(1),
                &no_pytest,
                &fixture("no-module-named-pytest.log"),
                Reports::Silent
            ),
            Some(GateProblem::RunnerMissing {
                runner: "pytest".to_owned(),
                error: "/var/tmp/limits-cap/.venv/bin/python: No module named pytest".to_owned()
            })
        );
        let npx = ["npx", "--no-install", "vitest", "run"];
        assert!(matches!(
            classified(&exited(1), &npx, &fixture("npx-missing-package.log"), Reports::NotConfigured),
            Some(GateProblem::RunnerMissing { runner, .. }) if runner == "vitest"
        ));
        let cargo = ["cargo", "nosuchsubcommand-xyz", "run"];
        assert!(matches!(
            classified(&exited(101), &cargo, &fixture("cargo-no-such-command.log"), Reports::NotConfigured),
            Some(GateProblem::RunnerMissing { runner, .. }) if runner == "cargo nosuchsubcommand-xyz"
        ));
        let node = ["node", "node_modules/vitest/vitest.mjs", "run"];
        assert!(matches!(
            classified(&exited(1), &node, &fixture("node-cannot-find-module.log"), Reports::NotConfigured),
            Some(GateProblem::RunnerMissing { runner, .. }) if runner == "node_modules/vitest/vitest.mjs"
        ));
    }

    /// Real outputs of gates that started: the code's failures, not the environment's.
    #[test]
    fn real_outputs_of_gates_that_started_are_not_start_failures() {
        let conftest = [".venv/bin/python", "-m", "pytest", "conftestdir"];
        assert_eq!(
            classified(
                &exited(4),
                &conftest,
                &fixture("conftest-import-error.log"),
                Reports::Silent
            ),
            None,
            "the project's own import error is the code's"
        );
        let home = [".venv/bin/python", "-m", "pytest", "hometest"];
        assert_eq!(
            classified(
                &exited(1),
                &home,
                &fixture("test-reads-home.log"),
                Reports::Ran
            ),
            None,
            "a test ran and was denied a file: the gate started"
        );
        let go = ["go", "test", "./..."];
        assert_eq!(
            classified(
                &exited(1),
                &go,
                &fixture("go-outside-module.log"),
                Reports::NotConfigured
            ),
            None
        );
        let python = ["/tmp/limits-exp/venv/bin/python", "-m", "pytest"];
        assert_eq!(
            classified(
                &exited(0),
                &python,
                &fixture("venv-under-tmp.log"),
                Reports::Silent
            ),
            None,
            "exit 0 started"
        );
    }

    #[test]
    fn spawn_errors_are_start_failures_and_a_hidden_program_is_named() {
        let reason =
            "cannot start `/tmp/limits-exp/venv/bin/pytest`: Permission denied (os error 13)";
        let refused = Termination::NotStarted {
            reason: reason.to_owned(),
        };
        assert_eq!(
            classified(
                &refused,
                &["/tmp/limits-exp/venv/bin/pytest"],
                "",
                Reports::Silent
            ),
            hidden("/tmp/limits-exp/venv/bin/pytest", reason)
        );
        let missing = Termination::NotStarted {
            reason: "cannot start `nosuchprogram-xyz`: No such file or directory (os error 2)"
                .to_owned(),
        };
        assert!(matches!(
            classified(&missing, &["nosuchprogram-xyz"], "", Reports::Silent),
            Some(GateProblem::CouldNotStart { reason }) if reason.contains("os error 2")
        ));
    }

    #[test]
    fn without_confined_reads_no_denial_is_the_sandboxs() {
        let argv = argv(&["/tmp/limits-exp/venv/bin/python", "-m", "pytest"]);
        let log = fixture("venv-under-tmp.log");
        let facts = StartFacts {
            termination: &exited(1),
            argv: &argv,
            log: &log,
            reports: Reports::Silent,
            visible: None,
        };
        assert_eq!(classify(&facts), None);
    }

    #[test]
    fn a_denied_path_the_sandbox_shows_is_the_codes() {
        let log = "PermissionError: [Errno 13] Permission denied: '/var/tmp/limits-cap/data/x'";
        assert_eq!(
            classified(
                &exited(1),
                &["python3", "-m", "pytest"],
                log,
                Reports::Silent
            ),
            None
        );
        let own_tmp = "PermissionError: [Errno 13] Permission denied: '/tmp/meta-agent-tmp-ab12/x'";
        assert_eq!(
            classified(
                &exited(1),
                &["python3", "-m", "pytest"],
                own_tmp,
                Reports::Silent
            ),
            None,
            "the command's own temporary directory is its own"
        );
    }

    #[test]
    fn denied_paths_are_read_in_every_spelling() {
        let cases = [
            (
                "PermissionError: [Errno 13] Permission denied: '/a/b/pyvenv.cfg'",
                "/a/b/pyvenv.cfg",
            ),
            (
                "open /root/go/pkg/mod/x.go: permission denied",
                "/root/go/pkg/mod/x.go",
            ),
            (
                "bash: /opt/v/bin/pytest: Permission denied",
                "/opt/v/bin/pytest",
            ),
            (
                "Error: EACCES: permission denied, open '/home/u/.npmrc'",
                "/home/u/.npmrc",
            ),
            (
                "cannot start `/tmp/v/bin/x`: Permission denied (os error 13)",
                "/tmp/v/bin/x",
            ),
        ];
        for (line, path) in cases {
            let found = denied_paths(line);
            assert_eq!(
                found.first().map(|(p, _)| p.as_path()),
                Some(Path::new(path)),
                "{line}"
            );
        }
        assert!(denied_paths("error: /a/b is missing").is_empty());
    }

    proptest::proptest! {
        /// Whatever the output, reading it never panics, and every path found is absolute,
        /// appears in its line, and comes from a line that reports a denial.
        #[test]
        fn denied_paths_never_invent_a_path(log in "(?s).{0,400}") {
            for (path, line) in denied_paths(&log) {
                proptest::prop_assert!(path.is_absolute());
                let text = path.to_string_lossy();
                proptest::prop_assert!(line.contains(text.as_ref()), "{} not in {}", text, line);
                let lower = line.to_ascii_lowercase();
                proptest::prop_assert!(DENIALS.iter().any(|word| lower.contains(word)));
            }
        }

        /// A path put into a tool's denial message is read back exactly.
        #[test]
        fn a_denied_path_is_read_back(
            parts in proptest::collection::vec("[A-Za-z0-9_.+@-]{1,12}", 1..6),
            template in 0usize..4,
        ) {
            let path = format!("/{}", parts.join("/"));
            let path = path.trim_end_matches('.').to_owned();
            proptest::prop_assume!(path.len() > 1);
            let line = match template {
                0 => format!("PermissionError: [Errno 13] Permission denied: '{path}'"),
                1 => format!("open {path}: permission denied"),
                2 => format!("bash: {path}: Permission denied"),
                _ => format!("Error: EACCES: permission denied, open \"{path}\""),
            };
            let found = denied_paths(&line);
            proptest::prop_assert_eq!(found.first().map(|(p, _)| p.clone()), Some(PathBuf::from(&path)));
        }

        /// Any output of a gate whose reports show it ran is never a start failure.
        #[test]
        fn a_gate_that_ran_started(log in "(?s).{0,300}", code in 1i32..256) {
            let found = classified(&exited(code), &["python3", "-m", "pytest"], &log, Reports::Ran);
            proptest::prop_assert_eq!(found, None);
        }
    }
}
