//! Pause points: named locations of a run (`after_plan`, `before_llm_call`, ...) where a run
//! stops on purpose when a maintainer asked it to (`pause:` in `.meta-agent.yml`, `--pause-at`),
//! with an optional [`condition`] over the location's fields and a hit count.
//!
//! Plain data and pure decisions: [`reach`] counts one arrival at a location and says whether the
//! run pauses there; [`PauseGate`] shares the rules and counts between the engine and the agent
//! (whose model and tool calls are locations too). Stopping the run is the engine's pause (see
//! `engine::pause`): the work kept, the session saved, exit code 5.
//!
//! Counting: every arrival whose location and condition match a rule is one hit of that rule. A
//! rule pauses at hit `after + every`, `after + 2 * every`, ... (`after` defaults to 0, `every`
//! to 1: every hit). A pause inside an act stops the act, which is redone on resume (its edits
//! kept); a pause before the commit takes the decision again: the arrivals the run went through
//! up to the pause are replayed then ([`PauseCounts::replay`]), counted but never paused at, so
//! the run goes on past the pause.

pub mod condition;
pub mod context;

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use condition::{ConditionError, Expr};

/// Where a run can pause.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// The plan of the next act is chosen (build, hindsight, agent fix), before the act; and,
    /// inside a build act, the agent's planner made its sub-task plan, before any sub-task runs.
    AfterPlan,
    /// A request to the model is about to be sent.
    BeforeLlmCall,
    /// The model answered, before its tool calls run.
    AfterLlmAnswer,
    /// A tool call of the model, before it runs.
    OnToolCall,
    /// A tool call ran and succeeded.
    AfterToolCall,
    /// A tool call ran and failed (its error goes back to the model).
    OnToolError,
    /// The gates of an observation have run, before the decision.
    AfterGates,
    /// Verified work is about to be committed.
    BeforeCommit,
    /// The verified commit is about to be pushed (a GitHub run that pushes; a local run never
    /// does). The commit is held in the run's artifact until a maintainer says go on.
    BeforePush,
    /// A sub-task is about to be handed to the read-only explorer.
    OnDelegate,
}

impl Location {
    /// Every location, in the order of a run.
    pub const ALL: [Location; 10] = [
        Location::AfterPlan,
        Location::OnDelegate,
        Location::BeforeLlmCall,
        Location::AfterLlmAnswer,
        Location::OnToolCall,
        Location::AfterToolCall,
        Location::OnToolError,
        Location::AfterGates,
        Location::BeforeCommit,
        Location::BeforePush,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Location::AfterPlan => "after_plan",
            Location::BeforeLlmCall => "before_llm_call",
            Location::AfterLlmAnswer => "after_llm_answer",
            Location::OnToolCall => "on_tool_call",
            Location::AfterToolCall => "after_tool_call",
            Location::OnToolError => "on_tool_error",
            Location::AfterGates => "after_gates",
            Location::BeforeCommit => "before_commit",
            Location::BeforePush => "before_push",
            Location::OnDelegate => "on_delegate",
        }
    }

    /// The location named `name`.
    pub fn named(name: &str) -> Option<Location> {
        Location::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// The fields a condition at this location may use.
    pub fn fields(self) -> &'static [Field] {
        match self {
            Location::AfterPlan => &[Field::Iteration, Field::Plan],
            Location::BeforeLlmCall | Location::AfterLlmAnswer => {
                &[Field::Iteration, Field::Call, Field::Role, Field::Model]
            }
            Location::OnToolCall | Location::AfterToolCall | Location::OnToolError => {
                &[Field::Iteration, Field::Call, Field::Tool, Field::Path]
            }
            Location::AfterGates => &[Field::Iteration, Field::Gate, Field::Result],
            Location::BeforeCommit | Location::BeforePush => {
                &[Field::Iteration, Field::Path, Field::Files]
            }
            Location::OnDelegate => &[Field::Iteration, Field::Role],
        }
    }

    /// Whether a run paused here comes back to this location when it resumes (the act is redone;
    /// the decision to commit is taken again), so that arrival is replayed.
    pub fn reached_again_on_resume(self) -> bool {
        match self {
            Location::BeforeLlmCall
            | Location::AfterLlmAnswer
            | Location::OnToolCall
            | Location::AfterToolCall
            | Location::OnToolError
            | Location::OnDelegate
            | Location::BeforeCommit => true,
            Location::AfterPlan | Location::AfterGates | Location::BeforePush => false,
        }
    }
}

/// A field of a location, as conditions name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The loop's iteration (0 is the build).
    Iteration,
    /// The plan: `build`, `hindsight`, `agent_fix` (the loop's, before the act), `subtasks` (the
    /// agent's planner made a sub-task plan, inside a build act).
    Plan,
    /// The model call's number within the act (1-based).
    Call,
    /// Who calls the model: `builder` or `explorer`.
    Role,
    /// The model's name.
    Model,
    /// The tool's name (`edit_file`, `run_command`, ...).
    Tool,
    /// A repository-relative path: the tool call's `path` argument, a file the commit changes.
    Path,
    /// A gate's name.
    Gate,
    /// A gate's result: `passed`, `failed`, `skipped`.
    Result,
    /// How many files the commit changes.
    Files,
}

/// The type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    Number,
}

impl Field {
    const ALL: [Field; 10] = [
        Field::Iteration,
        Field::Plan,
        Field::Call,
        Field::Role,
        Field::Model,
        Field::Tool,
        Field::Path,
        Field::Gate,
        Field::Result,
        Field::Files,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Field::Iteration => "iteration",
            Field::Plan => "plan",
            Field::Call => "call",
            Field::Role => "role",
            Field::Model => "model",
            Field::Tool => "tool",
            Field::Path => "path",
            Field::Gate => "gate",
            Field::Result => "result",
            Field::Files => "files",
        }
    }

    pub fn named(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.as_str() == name)
    }

    pub fn kind(self) -> FieldKind {
        match self {
            Field::Iteration | Field::Call | Field::Files => FieldKind::Number,
            Field::Plan
            | Field::Role
            | Field::Model
            | Field::Tool
            | Field::Path
            | Field::Gate
            | Field::Result => FieldKind::Text,
        }
    }
}

/// The fields' values at one arrival (a field the location lacks is absent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Values {
    pub numbers: BTreeMap<String, u64>,
    pub texts: BTreeMap<String, String>,
}

impl Values {
    /// Sets a number field.
    pub fn number_of(mut self, field: Field, value: u64) -> Values {
        self.numbers.insert(field.as_str().to_owned(), value);
        self
    }

    /// Sets a text field.
    pub fn text_of(mut self, field: Field, value: impl Into<String>) -> Values {
        self.texts.insert(field.as_str().to_owned(), value.into());
        self
    }

    pub fn number(&self, field: Field) -> Option<u64> {
        self.numbers.get(field.as_str()).copied()
    }

    pub fn text(&self, field: Field) -> Option<&str> {
        self.texts.get(field.as_str()).map(String::as_str)
    }
}

/// One arrival at a location: a condition holds when it holds for any of the alternatives
/// (after the gates, one per gate; before a commit, one per changed file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrival {
    pub at: Location,
    pub alternatives: Vec<Values>,
}

impl Arrival {
    /// An arrival with one set of values.
    pub fn one(at: Location, values: Values) -> Arrival {
        Arrival {
            at,
            alternatives: vec![values],
        }
    }
}

/// One configured pause point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub at: Location,
    /// The condition as written, and parsed.
    pub when: Option<(String, Expr)>,
    /// Hits that pass before the first pause.
    pub after: u32,
    /// Pause at every `every`-th hit after those (at least 1).
    pub every: u32,
}

impl Rule {
    /// A rule from its parts: the condition parsed and checked against the location.
    pub fn new(
        at: Location,
        when: Option<&str>,
        after: u32,
        every: u32,
    ) -> Result<Rule, ConditionError> {
        let when = match when {
            Some(text) => {
                let expr = condition::parse(text)?;
                condition::check(&expr, at)?;
                Some((text.to_owned(), expr))
            }
            None => None,
        };
        Ok(Rule {
            at,
            when,
            after,
            every: every.max(1),
        })
    }

    /// Whether `arrival` is a hit of this rule.
    fn matches(&self, arrival: &Arrival) -> bool {
        self.at == arrival.at
            && self.when.as_ref().is_none_or(|(_, expr)| {
                arrival
                    .alternatives
                    .iter()
                    .any(|values| condition::holds(expr, values))
            })
    }

    /// Whether the `hit`-th hit pauses.
    fn pauses_at(&self, hit: u32) -> bool {
        hit > self.after && (hit - self.after).is_multiple_of(self.every)
    }

    /// The rule as a person writes it: `before_llm_call when call == 2 (every 2)`.
    pub fn describe(&self) -> String {
        let mut text = self.at.as_str().to_owned();
        if let Some((condition, _)) = &self.when {
            text.push_str(&format!(" when {condition}"));
        }
        if self.after > 0 {
            text.push_str(&format!(", after {}", self.after));
        }
        if self.every > 1 {
            text.push_str(&format!(", every {}", self.every));
        }
        text
    }
}

/// The counts a run keeps across pauses and resumes (saved in the session).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseCounts {
    /// Arrivals per location.
    #[serde(default)]
    pub arrivals: BTreeMap<Location, u32>,
    /// Hits per rule (by [`Rule::describe`]: a rule added or removed on resume counts alone).
    #[serde(default)]
    pub hits: BTreeMap<String, u32>,
    /// Arrivals the run already went through before its last pause, per location: reached again
    /// after the resume (the act redone, the decision taken again), they are counted but never
    /// pause.
    #[serde(default)]
    pub replay: BTreeMap<Location, u32>,
    /// `resume --step`: pause at the next arrival at this location, whatever the rules say.
    #[serde(default)]
    pub step: Option<Location>,
}

/// Why a run paused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A configured rule (as [`Rule::describe`] says it), at its `hit`-th hit.
    Rule { rule: String, hit: u32 },
    /// `resume --step`.
    Step,
}

/// Where and why a run paused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseHit {
    pub at: Location,
    /// The arrival's number at its location.
    pub arrival: u32,
    /// The values at the arrival (the first alternative's).
    pub values: Values,
    pub cause: Cause,
    /// The arrivals gone through up to this one, this one included: replayed, not paused at,
    /// when the run comes back to them on resume.
    pub replay: BTreeMap<Location, u32>,
}

/// Counts `arrival` against `rules`; `Some` when the run pauses there. An arrival the run went
/// through before its last pause (see [`PauseCounts::replay`]) is counted and goes on.
pub fn reach(counts: &mut PauseCounts, rules: &[Rule], arrival: &Arrival) -> Option<PauseHit> {
    let number = counts.arrivals.get(&arrival.at).copied().unwrap_or(0) + 1;
    let matching: Vec<&Rule> = rules.iter().filter(|rule| rule.matches(arrival)).collect();
    let replayed = counts
        .replay
        .get(&arrival.at)
        .is_some_and(|&through| number <= through);
    let cause = if replayed {
        None
    } else if counts.step == Some(arrival.at) {
        Some(Cause::Step)
    } else {
        matching.iter().find_map(|rule| {
            let hit = counts.hits.get(&rule.describe()).copied().unwrap_or(0) + 1;
            rule.pauses_at(hit).then(|| Cause::Rule {
                rule: rule.describe(),
                hit,
            })
        })
    };
    let again = cause.is_some() && arrival.at.reached_again_on_resume();
    let mut replay = counts.arrivals.clone();
    replay.insert(arrival.at, number);
    if !again {
        counts.arrivals.insert(arrival.at, number);
        for rule in &matching {
            *counts.hits.entry(rule.describe()).or_insert(0) += 1;
        }
    }
    let cause = cause?;
    counts.step = None;
    if again {
        counts.replay = replay.clone();
    }
    Some(PauseHit {
        at: arrival.at,
        arrival: number,
        values: arrival.alternatives.first().cloned().unwrap_or_default(),
        cause,
        replay,
    })
}

/// What the agent saw at a pause inside an act (the engine adds the rest of the context).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentView {
    pub role: String,
    pub model: String,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// The conversation as it was (or is about to be) sent.
    pub messages: Vec<crate::chat::Message>,
    /// The tool call about to run (or that just ran), when there is one.
    pub tool_call: Option<crate::chat::ToolCall>,
    /// Its result, after it ran.
    pub tool_result: Option<String>,
    /// The sub-task plan the agent's planner made (`after_plan` inside a build act).
    #[serde(default)]
    pub sub_plan: Option<crate::subplan::TaskPlan>,
}

/// The rules and counts shared by the engine and the agent during a run.
#[derive(Debug, Default)]
pub struct PauseGate {
    rules: Vec<Rule>,
    state: Mutex<GateState>,
}

#[derive(Debug, Default)]
struct GateState {
    counts: PauseCounts,
    hit: Option<(PauseHit, Option<AgentView>)>,
}

impl PauseGate {
    pub fn new(rules: Vec<Rule>) -> PauseGate {
        PauseGate {
            rules,
            state: Mutex::default(),
        }
    }

    /// Whether any rule is configured or a step is asked for (nothing to count otherwise).
    pub fn armed(&self) -> bool {
        !self.rules.is_empty() || self.lock().counts.step.is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the session's counts (at the start of a run or an act).
    pub fn load(&self, counts: &PauseCounts) {
        self.lock().counts = counts.clone();
    }

    /// The counts as they are now.
    pub fn counts(&self) -> PauseCounts {
        self.lock().counts.clone()
    }

    /// Counts an arrival; true when the run pauses there (the hit is kept with `view`, for
    /// [`PauseGate::take_hit`]). Once a hit is kept, every later arrival pauses too (the act is
    /// stopping).
    pub fn reach(&self, arrival: &Arrival, view: impl FnOnce() -> Option<AgentView>) -> bool {
        let mut state = self.lock();
        if state.hit.is_some() {
            return true;
        }
        let Some(hit) = reach(&mut state.counts, &self.rules, arrival) else {
            return false;
        };
        state.hit = Some((hit, view()));
        true
    }

    /// Whether an arrival paused (the act under way is stopping).
    pub fn stopping(&self) -> bool {
        self.lock().hit.is_some()
    }

    /// The pause hit, once (the engine takes it to pause the run).
    pub fn take_hit(&self) -> Option<(PauseHit, Option<AgentView>)> {
        self.lock().hit.take()
    }
}

#[cfg(test)]
mod tests;
