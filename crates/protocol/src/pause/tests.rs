//! Counting arrivals and hits: `after`/`every`, conditions, the arrivals replayed on resume, `--step`.

use super::*;

fn tool(name: &str) -> Arrival {
    Arrival::one(
        Location::OnToolCall,
        Values::default().text_of(Field::Tool, name),
    )
}

fn plan() -> Arrival {
    Arrival::one(
        Location::AfterPlan,
        Values::default().text_of(Field::Plan, "build"),
    )
}

/// Which of `arrivals` pause, one run through them (a pause is resumed at once: a location
/// reached again on resume is reached again).
fn pauses(rules: &[Rule], arrivals: &[Arrival]) -> Vec<usize> {
    let mut counts = PauseCounts::default();
    let mut paused = Vec::new();
    for (i, arrival) in arrivals.iter().enumerate() {
        if reach(&mut counts, rules, arrival).is_some() {
            paused.push(i);
            if arrival.at.reached_again_on_resume() {
                assert!(
                    reach(&mut counts, rules, arrival).is_none(),
                    "replayed on resume"
                );
            }
        }
    }
    paused
}

#[test]
fn a_rule_pauses_at_every_hit_by_default() {
    let rules = [Rule::new(Location::AfterPlan, None, 0, 1).unwrap()];
    assert_eq!(pauses(&rules, &[plan(), tool("a"), plan()]), [0, 2]);
}

#[test]
fn after_and_every_count_the_hits_of_the_condition() {
    let rules = [Rule::new(Location::OnToolCall, Some(r#"tool == "edit""#), 1, 2).unwrap()];
    let arrivals: Vec<Arrival> = ["edit", "read", "edit", "edit", "read", "edit", "edit"]
        .iter()
        .map(|name| tool(name))
        .collect();
    // Hits: edit#1 (index 0), #2 (2), #3 (3), #4 (5), #5 (6): after 1, every 2 → hits 3 and 5.
    assert_eq!(pauses(&rules, &arrivals), [3, 6]);
}

#[test]
fn a_false_condition_never_pauses() {
    let rules = [Rule::new(Location::OnToolCall, Some(r#"tool == "edit""#), 0, 1).unwrap()];
    assert!(pauses(&rules, &[tool("read"), tool("list")]).is_empty());
}

#[test]
fn the_arrivals_up_to_a_pause_are_replayed_on_resume() {
    let rules = [
        Rule::new(Location::OnToolCall, None, 0, 1).unwrap(),
        Rule::new(Location::BeforeLlmCall, Some("call == 1"), 0, 1).unwrap(),
    ];
    let call = |n: u64| {
        Arrival::one(
            Location::BeforeLlmCall,
            Values::default().number_of(Field::Call, n),
        )
    };
    // The act: call 1 pauses; resumed, the act is redone from the counts it began with.
    let begun = PauseCounts::default();
    let mut counts = begun.clone();
    let first = reach(&mut counts, &rules, &call(1)).unwrap();
    assert_eq!(first.arrival, 1);
    let mut counts = PauseCounts {
        replay: first.replay.clone(),
        ..begun.clone()
    };
    assert!(reach(&mut counts, &rules, &call(1)).is_none(), "replayed");
    let tool_hit = reach(&mut counts, &rules, &tool("edit")).unwrap();
    assert_eq!(
        tool_hit.cause,
        Cause::Rule {
            rule: "on_tool_call".into(),
            hit: 1
        }
    );
    // Redone again: the call and the tool call are replayed, the next tool call pauses.
    let mut counts = PauseCounts {
        replay: tool_hit.replay.clone(),
        ..begun
    };
    assert!(reach(&mut counts, &rules, &call(1)).is_none());
    assert!(reach(&mut counts, &rules, &tool("edit")).is_none());
    let next = reach(&mut counts, &rules, &tool("read")).unwrap();
    assert_eq!(
        next.cause,
        Cause::Rule {
            rule: "on_tool_call".into(),
            hit: 2
        }
    );
}

#[test]
fn a_pause_before_the_commit_is_replayed_when_the_decision_is_taken_again() {
    let rules = [Rule::new(Location::BeforeCommit, None, 0, 1).unwrap()];
    let commit = Arrival::one(Location::BeforeCommit, Values::default());
    let mut counts = PauseCounts::default();
    assert!(reach(&mut counts, &rules, &commit).is_some());
    assert!(reach(&mut counts, &rules, &commit).is_none());
    assert_eq!(counts.arrivals[&Location::BeforeCommit], 1, "counted once");
}

#[test]
fn a_step_pauses_at_the_next_arrival_of_its_location_only() {
    let mut counts = PauseCounts {
        step: Some(Location::OnToolCall),
        ..PauseCounts::default()
    };
    assert!(reach(&mut counts, &[], &plan()).is_none());
    let hit = reach(&mut counts, &[], &tool("a")).unwrap();
    assert_eq!(hit.cause, Cause::Step);
    assert_eq!(counts.step, None);
}

#[test]
fn after_gates_holds_when_any_gate_satisfies_the_condition() {
    let gate = |name: &str, result: &str| {
        Values::default()
            .text_of(Field::Gate, name)
            .text_of(Field::Result, result)
    };
    let arrival = Arrival {
        at: Location::AfterGates,
        alternatives: vec![gate("lint", "passed"), gate("tests", "failed")],
    };
    let failing = Rule::new(
        Location::AfterGates,
        Some(r#"gate == "tests" && result == "failed""#),
        0,
        1,
    )
    .unwrap();
    let lint_failing = Rule::new(
        Location::AfterGates,
        Some(r#"gate == "lint" && result == "failed""#),
        0,
        1,
    )
    .unwrap();
    assert!(reach(&mut PauseCounts::default(), &[failing], &arrival).is_some());
    assert!(reach(&mut PauseCounts::default(), &[lint_failing], &arrival).is_none());
}

#[test]
fn a_rule_is_described_as_written() {
    let rule = Rule::new(Location::BeforeLlmCall, Some("call >= 2"), 1, 3).unwrap();
    assert_eq!(
        rule.describe(),
        "before_llm_call when call >= 2, after 1, every 3"
    );
    assert_eq!(
        Rule::new(Location::AfterGates, Some("tool == \"x\""), 0, 1)
            .unwrap_err()
            .column,
        1
    );
}

#[test]
fn every_location_is_named_and_found_by_its_name() {
    for location in Location::ALL {
        assert_eq!(Location::named(location.as_str()), Some(location));
        assert!(location.fields().contains(&Field::Iteration));
    }
}

#[test]
fn the_gate_keeps_the_first_hit_and_stops_everything_after_it() {
    let gate = PauseGate::new(vec![Rule::new(Location::OnToolCall, None, 0, 1).unwrap()]);
    assert!(gate.armed());
    assert!(!gate.reach(&plan(), || None));
    assert!(gate.reach(&tool("a"), || Some(AgentView::default())));
    assert!(gate.reach(&plan(), || None));
    let (hit, view) = gate.take_hit().unwrap();
    assert_eq!(hit.at, Location::OnToolCall);
    assert!(view.is_some());
    assert!(gate.take_hit().is_none());
}
