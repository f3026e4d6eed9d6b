//! Evaluation suites: `evals/<name>/suite.yml`, the tasks an evaluation runs and how each result
//! is graded. Serde types that deny unknown keys (a typo names its line), a JSON Schema generated
//! from them (like the configuration's), and [`Suite::load`], which also checks everything that
//! can be checked before a run starts: sources exist, hidden test files exist, inline
//! configurations parse, task files parse, task ids are unique.
//!
//! Loading reads files only; nothing here writes anywhere (the sources stay untouched).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::EvalError;
pub use meta_agent_protocol::eval::CompositeMode;

/// The newest suite schema version this binary reads.
pub const SUITE_VERSION: u32 = 1;

/// `suite.yml`: the whole file.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    /// Schema version of this file. Only `1` exists today.
    pub version: u32,
    /// The suite's name (default: the directory's name).
    #[serde(default)]
    pub name: Option<String>,
    /// What the suite measures, for the report.
    #[serde(default)]
    pub description: String,
    /// Settings every task starts from.
    #[serde(default)]
    pub defaults: TaskDefaults,
    /// The tasks, each run `--runs` times.
    pub tasks: Vec<TaskSpec>,
}

/// Settings a task inherits unless it sets them.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskDefaults {
    /// Improve iterations before the run escalates (default: the configuration's).
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Each run's own LLM budget in US dollars (overrides `llm.max_cost_usd`).
    #[serde(default)]
    pub budget_usd: Option<f64>,
}

/// One task of a suite.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// A unique id (letters, digits, `-`, `_`, `.`): names the task in results and reports.
    pub id: String,
    /// The repository the run starts from.
    pub source: Source,
    /// The task as text (first line is the title).
    #[serde(default)]
    pub task: Option<String>,
    /// A task file (`meta-agent run --task` format), relative to the suite directory.
    #[serde(default)]
    pub task_file: Option<PathBuf>,
    /// Shell commands run in the fresh clone before the engine, network on; a failure makes the
    /// run an `error` (never a `fail`).
    #[serde(default)]
    pub setup: Vec<String>,
    /// A configuration file (`.meta-agent.yml` format) relative to the suite directory, used
    /// instead of the source's own.
    #[serde(default)]
    pub config_file: Option<PathBuf>,
    /// An inline configuration (`.meta-agent.yml` format), used instead of the source's own.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, serde_json::Value>>")]
    pub config: Option<serde_yaml::Value>,
    /// A recorded model transcript (JSON lines) replayed instead of calling a model, relative to
    /// the suite directory: the task runs offline and deterministically.
    #[serde(default)]
    pub replay: Option<PathBuf>,
    /// Improve iterations before the run escalates.
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// This run's LLM budget in US dollars.
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// How the result is graded; all must pass (default: `gates`).
    #[serde(default, with = "serde_yaml::with::singleton_map_recursive")]
    #[schemars(with = "Vec<Grader>")]
    pub graders: Vec<Grader>,
}

/// Where a task's repository comes from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// A directory (relative to the suite directory), copied and committed into a fresh
    /// repository.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// A git repository (path relative to the suite directory, or URL), cloned fresh.
    #[serde(default)]
    pub git: Option<String>,
    /// The commit (or any revision) of `git` to start from (default: its HEAD).
    #[serde(default)]
    pub commit: Option<String>,
}

/// How a run's result is judged.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Grader {
    /// The repository's gates pass on the result.
    Gates {},
    /// The run ended as expected (`committed`, `escalated`, `nothing_to_do`): for tasks a good
    /// run must escalate.
    Outcome { expect: ExpectedOutcome },
    /// Test files applied only after the run (the model never sees them); the gates then run.
    HiddenTests(HiddenTests),
    /// A file's content (or the run's diff) equals this text exactly.
    Exact(TextCheck),
    /// A regular expression must match (or, with `absent: true`, must not match) a file or the
    /// diff.
    Pattern(PatternCheck),
    /// A rubric scored 0-10 by the fast model; passes at `threshold` or more.
    LlmJudge(LlmJudge),
    /// A person decides: written to the review queue, `pending` until `eval grade`.
    Human(HumanReview),
    /// Several graders combined.
    Composite(Composite),
}

impl Grader {
    /// The grader's kind, as results name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Grader::Gates {} => "gates",
            Grader::Outcome { .. } => "outcome",
            Grader::HiddenTests(_) => "hidden_tests",
            Grader::Exact(_) => "exact",
            Grader::Pattern(_) => "pattern",
            Grader::LlmJudge(_) => "llm_judge",
            Grader::Human(_) => "human",
            Grader::Composite(_) => "composite",
        }
    }
}

/// What a run must end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedOutcome {
    Committed,
    Escalated,
    NothingToDo,
}

impl ExpectedOutcome {
    /// The outcome's name in run records.
    pub fn as_str(self) -> &'static str {
        match self {
            ExpectedOutcome::Committed => "committed",
            ExpectedOutcome::Escalated => "escalated",
            ExpectedOutcome::NothingToDo => "nothing_to_do",
        }
    }
}

/// `hidden_tests:`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HiddenTests {
    /// Repository path → file (relative to the suite directory) written there after the run.
    pub files: BTreeMap<String, PathBuf>,
    /// Tests (`file::name` or `class::name` as the JUnit report names them) that fail before the
    /// change and must pass after it.
    #[serde(default)]
    pub fail_to_pass: Vec<String>,
    /// Tests that must keep passing.
    #[serde(default)]
    pub pass_to_pass: Vec<String>,
    /// Only these gates run for the hidden tests (default: every test gate).
    #[serde(default)]
    pub gates: Vec<String>,
}

/// What `exact` and `pattern` look at.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextCheck {
    /// A file of the result (relative to the repository root); the run's diff when absent.
    #[serde(default)]
    pub path: Option<String>,
    /// The exact expected text.
    pub equals: String,
}

/// `pattern:`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternCheck {
    /// A file of the result; the run's diff when absent.
    #[serde(default)]
    pub path: Option<String>,
    /// A regular expression (Rust `regex` syntax).
    pub regex: String,
    /// Pass when the expression does NOT match.
    #[serde(default)]
    pub absent: bool,
}

/// `llm_judge:`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmJudge {
    /// What a good change looks like; the model scores the diff against it, 0-10.
    pub rubric: String,
    /// The lowest passing score (default 7).
    #[serde(default = "default_judge_threshold")]
    pub threshold: f64,
    /// A recorded transcript of the judge's answer (JSON lines, relative to the suite
    /// directory) replayed instead of asking the fast model: the grade runs offline. Required
    /// when the task itself replays a transcript (the judge must not read the task's).
    #[serde(default)]
    pub replay: Option<PathBuf>,
}

fn default_judge_threshold() -> f64 {
    7.0
}

/// `human:`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HumanReview {
    /// What the reviewer checks, one item each.
    pub checklist: Vec<String>,
}

/// `composite:`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Composite {
    /// `all` pass, `any` passes, or `weighted`: the passing weight share reaches `threshold`.
    pub mode: CompositeMode,
    /// For `weighted`: the share of weight (0-1) that must pass (default 1).
    #[serde(default)]
    pub threshold: Option<f64>,
    pub graders: Vec<Weighted>,
}

/// One grader of a composite, with its weight.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Weighted {
    /// Its weight (default 1).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// (Read as a single-key map through the task's `graders`, which applies recursively.)
    pub grader: Grader,
}

fn default_weight() -> f64 {
    1.0
}

/// A suite, loaded and checked.
#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    /// The directory paths in the suite are relative to.
    pub dir: PathBuf,
    /// The suite file.
    pub path: PathBuf,
    pub file: SuiteFile,
}

impl Suite {
    /// Reads a suite: `path` is the suite file or its directory (then `suite.yml` in it).
    /// Everything checkable before a run is checked here.
    pub fn load(path: &Path) -> Result<Suite, EvalError> {
        let file_path = if path.is_dir() {
            path.join("suite.yml")
        } else {
            path.to_owned()
        };
        let text = std::fs::read_to_string(&file_path).map_err(|source| EvalError::Read {
            path: file_path.clone(),
            source,
        })?;
        let file = parse(&text, &file_path)?;
        let parent = file_path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = parent.canonicalize().unwrap_or_else(|_| parent.to_owned());
        let name = file.name.clone().unwrap_or_else(|| {
            dir.file_name()
                .map_or_else(|| "suite".to_owned(), |n| n.to_string_lossy().into_owned())
        });
        let suite = Suite {
            name,
            dir,
            path: file_path,
            file,
        };
        suite.check(&text)?;
        Ok(suite)
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Option<&TaskSpec> {
        self.file.tasks.iter().find(|task| task.id == id)
    }

    /// A path of the suite, resolved against its directory.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.dir.join(path)
        }
    }

    /// The `git:` of a source resolved: a path relative to the suite directory when it exists
    /// there, otherwise as written (a URL).
    pub fn git_location(&self, git: &str) -> String {
        let local = self.dir.join(git);
        if !git.contains("://") && local.exists() {
            local.to_string_lossy().into_owned()
        } else {
            git.to_owned()
        }
    }

    fn check(&self, text: &str) -> Result<(), EvalError> {
        let mut seen = std::collections::BTreeSet::new();
        for (index, task) in self.file.tasks.iter().enumerate() {
            let key = |field: &str| format!("tasks[{index}].{field}");
            let needle = format!("id: {}", task.id);
            let earlier = self.file.tasks[..index]
                .iter()
                .filter(|other| other.id == task.id)
                .count();
            let line = nth_line(text, &needle, earlier);
            let invalid = |key: String, message: String| EvalError::Invalid {
                path: self.path.clone(),
                line,
                key,
                message,
            };
            if !valid_id(&task.id) {
                return Err(invalid(
                    key("id"),
                    format!("`{}`: use letters, digits, `-`, `_` and `.`", task.id),
                ));
            }
            if !seen.insert(task.id.clone()) {
                return Err(invalid(key("id"), format!("`{}` is used twice", task.id)));
            }
            self.check_task(task)
                .map_err(|(field, message)| invalid(key(&field), message))?;
        }
        if self.file.tasks.is_empty() {
            return Err(EvalError::Invalid {
                path: self.path.clone(),
                line: meta_agent_config::resolve::line_of(text, "tasks:"),
                key: "tasks".into(),
                message: "the suite has no tasks".into(),
            });
        }
        Ok(())
    }

    /// What is wrong with one task: (its key, the message).
    fn check_task(&self, task: &TaskSpec) -> Result<(), (String, String)> {
        self.check_source(&task.source)?;
        match (&task.task, &task.task_file) {
            (Some(_), Some(_)) => {
                return Err(("task".into(), "give `task` or `task_file`, not both".into()));
            }
            (None, None) => return Err(("task".into(), "give `task` or `task_file`".into())),
            (Some(text), None) if text.trim().is_empty() => {
                return Err(("task".into(), "the task text is empty".into()));
            }
            (None, Some(file)) => {
                meta_agent_protocol::task::Task::from_file(&self.resolve(file))
                    .map_err(|err| ("task_file".to_owned(), err.to_string()))?;
            }
            (Some(_), None) => {}
        }
        if task.config.is_some() && task.config_file.is_some() {
            return Err((
                "config".into(),
                "give `config` or `config_file`, not both".into(),
            ));
        }
        if let Some(file) = &task.config_file {
            meta_agent_config::read_raw(&self.resolve(file))
                .map_err(|err| ("config_file".to_owned(), err.to_string()))?;
        }
        if let Some(inline) = &task.config {
            let text = serde_yaml::to_string(inline)
                .map_err(|err| ("config".to_owned(), err.to_string()))?;
            meta_agent_config::parse_raw(&text, Path::new("(inline config)"))
                .map_err(|err| ("config".to_owned(), err.to_string()))?;
        }
        if let Some(replay) = &task.replay {
            let path = self.resolve(replay);
            if !path.is_file() {
                return Err((
                    "replay".into(),
                    format!("transcript {} does not exist", path.display()),
                ));
            }
        }
        for (index, grader) in task.graders.iter().enumerate() {
            self.check_grader(grader)
                .map_err(|(field, message)| (format!("graders[{index}].{field}"), message))?;
            if task.replay.is_some() && judges_live(grader) {
                return Err((
                    format!("graders[{index}]"),
                    "the task replays a transcript: give its llm_judge its own `replay:`".into(),
                ));
            }
        }
        Ok(())
    }

    fn check_source(&self, source: &Source) -> Result<(), (String, String)> {
        match (&source.dir, &source.git) {
            (Some(dir), None) => {
                let path = self.resolve(dir);
                if !path.is_dir() {
                    return Err((
                        "source.dir".into(),
                        format!("{} is not a directory", path.display()),
                    ));
                }
                if source.commit.is_some() {
                    return Err((
                        "source.commit".into(),
                        "`commit` needs `git`, not `dir`".into(),
                    ));
                }
                Ok(())
            }
            (None, Some(git)) => {
                let location = self.git_location(git);
                if !git.contains("://") && !Path::new(&location).exists() {
                    return Err(("source.git".into(), format!("{location} does not exist")));
                }
                Ok(())
            }
            (Some(_), Some(_)) => Err(("source".into(), "give `dir` or `git`, not both".into())),
            (None, None) => Err(("source".into(), "give `dir` or `git`".into())),
        }
    }

    fn check_grader(&self, grader: &Grader) -> Result<(), (String, String)> {
        match grader {
            Grader::Gates {} | Grader::Outcome { .. } | Grader::Exact(_) => Ok(()),
            Grader::HiddenTests(hidden) => {
                if hidden.files.is_empty() {
                    return Err(("hidden_tests.files".into(), "no files given".into()));
                }
                for (target, file) in &hidden.files {
                    let path = self.resolve(file);
                    if !path.is_file() {
                        return Err((
                            format!("hidden_tests.files.{target}"),
                            format!("hidden test file {} does not exist", path.display()),
                        ));
                    }
                    if !is_inside(target) {
                        return Err((
                            format!("hidden_tests.files.{target}"),
                            "the target must be a relative path inside the repository".into(),
                        ));
                    }
                }
                Ok(())
            }
            Grader::Pattern(pattern) => regex::Regex::new(&pattern.regex)
                .map(|_| ())
                .map_err(|err| ("pattern.regex".to_owned(), err.to_string())),
            Grader::LlmJudge(judge) => {
                if !(0.0..=10.0).contains(&judge.threshold) || judge.rubric.trim().is_empty() {
                    return Err((
                        "llm_judge".into(),
                        "needs a rubric and a threshold from 0 to 10".into(),
                    ));
                }
                match &judge.replay {
                    Some(replay) if !self.resolve(replay).is_file() => Err((
                        "llm_judge.replay".into(),
                        format!(
                            "transcript {} does not exist",
                            self.resolve(replay).display()
                        ),
                    )),
                    Some(_) | None => Ok(()),
                }
            }
            Grader::Human(review) => {
                if review.checklist.is_empty() {
                    Err(("human.checklist".into(), "the checklist is empty".into()))
                } else {
                    Ok(())
                }
            }
            Grader::Composite(composite) => self.check_composite(composite),
        }
    }

    fn check_composite(&self, composite: &Composite) -> Result<(), (String, String)> {
        if composite.graders.is_empty() {
            return Err(("composite.graders".into(), "no graders given".into()));
        }
        if let Some(threshold) = composite.threshold
            && !(0.0..=1.0).contains(&threshold)
        {
            return Err((
                "composite.threshold".into(),
                format!("{threshold} is not a share from 0 to 1"),
            ));
        }
        for (index, weighted) in composite.graders.iter().enumerate() {
            if !(weighted.weight.is_finite() && weighted.weight >= 0.0) {
                return Err((
                    format!("composite.graders[{index}].weight"),
                    "must be a non-negative number".into(),
                ));
            }
            self.check_grader(&weighted.grader)
                .map_err(|(field, message)| {
                    (format!("composite.graders[{index}].{field}"), message)
                })?;
        }
        Ok(())
    }
}

/// Whether a grader (or one inside a composite) is an `llm_judge` that would ask a model.
fn judges_live(grader: &Grader) -> bool {
    match grader {
        Grader::LlmJudge(judge) => judge.replay.is_none(),
        Grader::Composite(composite) => composite.graders.iter().any(|w| judges_live(&w.grader)),
        Grader::Gates {}
        | Grader::Outcome { .. }
        | Grader::HiddenTests(_)
        | Grader::Exact(_)
        | Grader::Pattern(_)
        | Grader::Human(_) => false,
    }
}

/// Parses suite text; `path` is used in error messages only.
pub fn parse(text: &str, path: &Path) -> Result<SuiteFile, EvalError> {
    let file: SuiteFile = serde_yaml::from_str(text).map_err(|err| {
        let (line, column) = err
            .location()
            .map_or((0, 0), |loc| (loc.line(), loc.column()));
        EvalError::Parse {
            path: path.to_owned(),
            line,
            column,
            message: err.to_string(),
        }
    })?;
    if file.version != SUITE_VERSION {
        return Err(EvalError::Invalid {
            path: path.to_owned(),
            line: meta_agent_config::resolve::line_of(text, "version:"),
            key: "version".into(),
            message: format!(
                "suite version {} is not supported (this meta-agent reads version {SUITE_VERSION})",
                file.version
            ),
        });
    }
    Ok(file)
}

/// The JSON Schema of `suite.yml`, generated from the types.
pub fn json_schema() -> serde_json::Value {
    schemars::schema_for!(SuiteFile).to_value()
}

/// 1-based line of the `n`-th (0-based) line holding `needle`, or 0.
fn nth_line(text: &str, needle: &str, n: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains(needle))
        .nth(n)
        .map_or(0, |(index, _)| index + 1)
}

/// A relative path that stays inside the repository (no `..`, no root).
pub fn is_inside(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty()
        && path
            .components()
            .all(|part| matches!(part, std::path::Component::Normal(_)))
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "version: 1\ntasks:\n  - id: a\n    source: {dir: src}\n    task: Fix it\n    graders:\n      - gates: {}\n      - pattern: {path: calc.py, regex: 'x+'}\n      - composite:\n          mode: weighted\n          threshold: 0.5\n          graders:\n            - {weight: 2, grader: {exact: {equals: 'y'}}}\n";

    #[test]
    fn graders_read_as_single_key_maps() {
        let file = parse(MINIMAL, Path::new("suite.yml")).unwrap();
        let kinds: Vec<&str> = file.tasks[0].graders.iter().map(Grader::kind).collect();
        assert_eq!(kinds, ["gates", "pattern", "composite"]);
    }

    #[test]
    fn an_unknown_grader_names_its_line() {
        let text = MINIMAL.replace("- gates: {}", "- vibes: {}");
        let err = parse(&text, Path::new("s.yml")).unwrap_err().to_string();
        assert!(err.starts_with("s.yml:7:"), "{err}");
        assert!(err.contains("vibes"), "{err}");
    }

    #[test]
    fn a_wrong_version_names_the_key_and_line() {
        let text = MINIMAL.replace("version: 1", "version: 9");
        let err = parse(&text, Path::new("s.yml")).unwrap_err().to_string();
        assert_eq!(
            err,
            "s.yml:1: version: suite version 9 is not supported (this meta-agent reads version 1)"
        );
    }

    #[test]
    fn ids_are_plain() {
        assert!(valid_id("py-mean_2.a"));
        assert!(!valid_id("../x"));
        assert!(!valid_id(""));
        assert!(!valid_id("a b"));
    }
}
