//! Counting arrivals and hits: `after`/`every`, conditions, a passed arrival on resume, `--step`.

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
                    "passed on resume"
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
fn the_arrival_a_pause_stopped_at_is_passed_once_on_resume() {
    let rules = [Rule::new(Location::OnToolCall, None, 0, 1).unwrap()];
    let mut counts = PauseCounts::default();
    let hit = reach(&mut counts, &rules, &tool("a")).unwrap();
    assert_eq!(
        hit.passed,
        Passed {
            at: Location::OnToolCall,
            arrival: 1
        }
    );
    assert_eq!(counts.passed, Some(hit.passed));
    assert!(
        reach(&mut counts, &rules, &tool("a")).is_none(),
        "the same arrival again"
    );
    assert_eq!(counts.passed, None);
    let next = reach(&mut counts, &rules, &tool("b")).unwrap();
    assert_eq!(
        next.cause,
        Cause::Rule {
            rule: "on_tool_call".into(),
            hit: 2
        }
    );
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
