//! The two decisions over every combination of the facts and settings they read.

use super::*;

const BOT: &str = "github-actions[bot]";
const EMAIL: &str = "meta-agent@users.noreply.github.com";
const SESSION: &str = "19a-2b";
const HEAD: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const OTHER: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn bot() -> BotSide {
    BotSide {
        repository: RepoId::parse("octo/calc").unwrap(),
        bot_login: BOT.into(),
        branch_prefix: "meta-agent/".into(),
    }
}

/// Every pull request the facts can describe, over the values that matter.
fn every_pull() -> Vec<PullFacts> {
    let mut pulls = Vec::new();
    for head_repo in [
        Some("octo/calc"),
        Some("OCTO/Calc"),
        Some("mallory/calc"),
        Some("octo/calc-fork"),
        None,
    ] {
        for author in [BOT, "alice", "mallory"] {
            for head_ref in ["meta-agent/fix-x", "feature/x", "main", "release/1.x"] {
                for bits in 0..16 {
                    pulls.push(PullFacts {
                        number: 8,
                        head_repo: head_repo.map(str::to_owned),
                        head_ref: head_ref.into(),
                        head_sha: HEAD.into(),
                        base_ref: "main".into(),
                        open: bits & 1 == 1,
                        draft: bits & 2 == 2,
                        maintainer_can_modify: bits & 4 == 4,
                        head_protected: bits & 8 == 8,
                        author: author.into(),
                    });
                }
            }
        }
    }
    pulls
}

/// Every policy over the values that matter.
fn every_policy() -> Vec<PullPolicy> {
    let mut policies = Vec::new();
    for fix in [FixPlace::Stacked, FixPlace::HeadBranch] {
        for drafts in [false, true] {
            for exclude in [vec![], vec!["release/*".to_owned()]] {
                policies.push(PullPolicy {
                    fix,
                    drafts,
                    exclude,
                });
            }
        }
    }
    policies
}

/// Every way of asking: a command, a failing check of the head, a failing check of an older
/// commit.
fn every_asked() -> [Asked; 3] {
    [
        Asked::Command,
        Asked::FailingCheck {
            run_sha: HEAD.into(),
        },
        Asked::FailingCheck {
            run_sha: OTHER.into(),
        },
    ]
}

fn decide(pull: &PullFacts, asked: &Asked, policy: &PullPolicy) -> Publish {
    let origin = Origin::PullRequest {
        pull: pull.clone(),
        asked: asked.clone(),
    };
    plan(&PlanInput {
        origin: &origin,
        bot: &bot(),
        policy,
        default_branch: "main",
    })
}

fn same_repository(pull: &PullFacts) -> bool {
    pull.head_repo
        .as_deref()
        .is_some_and(|repo| repo.eq_ignore_ascii_case("octo/calc"))
}

fn bots_own(pull: &PullFacts) -> bool {
    pull.author == BOT && pull.head_ref.starts_with("meta-agent/")
}

/// What a failing check must be declined for, if anything: in this order, a fork's, the bot's
/// own (or a branch with its prefix), a draft the policy leaves alone, an excluded branch, a
/// head that moved.
fn check_declined(pull: &PullFacts, run_sha: &str, policy: &PullPolicy) -> Option<Declined> {
    let number = pull.number;
    if !same_repository(pull) {
        return Some(Declined::Fork { pull: number });
    }
    if pull.head_ref.starts_with("meta-agent/") {
        return Some(Declined::BotsOwn { pull: number });
    }
    if pull.draft && !policy.drafts {
        return Some(Declined::Draft { pull: number });
    }
    if !policy.exclude.is_empty() && pull.head_ref.starts_with("release/") {
        return Some(Declined::Excluded {
            pull: number,
            branch: pull.head_ref.clone(),
            glob: "release/*".into(),
        });
    }
    (run_sha != pull.head_sha).then(|| Declined::HeadMoved {
        pull: number,
        run: run_sha.into(),
        head: pull.head_sha.clone(),
    })
}

#[test]
fn a_fork_never_gets_a_branch_and_a_persons_branch_is_pushed_only_when_allowed() {
    for pull in every_pull() {
        for asked in every_asked() {
            for policy in every_policy() {
                let decision = decide(&pull, &asked, &policy);
                let case = format!("{pull:?} {asked:?} {policy:?}: {decision:?}");
                if !pull.open {
                    assert_eq!(
                        decision,
                        Publish::Decline(Declined::Closed { pull: 8 }),
                        "{case}"
                    );
                    continue;
                }
                if let Asked::FailingCheck { run_sha } = &asked
                    && let Some(declined) = check_declined(&pull, run_sha, &policy)
                {
                    assert_eq!(decision, Publish::Decline(declined), "{case}");
                    continue;
                }
                assert_command_like(&pull, &policy, &decision, &case);
            }
        }
    }
}

/// What a command (or a failing check the bot takes) decides for `pull`.
fn assert_command_like(pull: &PullFacts, policy: &PullPolicy, decision: &Publish, case: &str) {
    if !same_repository(pull) {
        let Publish::Patch(offer) = decision else {
            panic!("a fork's pull request must be patch-only: {case}");
        };
        assert_eq!(offer.head_sha, pull.head_sha, "{case}");
        assert_eq!(
            offer.why == PatchOnly::DeletedFork,
            pull.head_repo.is_none(),
            "{case}"
        );
        return;
    }
    let Publish::Branch(push) = decision else {
        panic!("a same-repository pull request gets a push plan: {case}");
    };
    if bots_own(pull) {
        assert_eq!(push.kind, PushKind::BotsOwnPull { pull: 8 }, "{case}");
        assert_eq!(push.trusted_branch, pull.base_ref, "{case}");
        assert_eq!(push.start, None, "{case}");
        return;
    }
    assert_eq!(push.trusted_branch, pull.head_ref, "{case}");
    assert_eq!(push.pull_into, pull.head_ref, "{case}");
    assert_eq!(
        push.start.as_deref(),
        Some(pull.head_sha.as_str()),
        "{case}"
    );
    let refusal = if pull.head_ref == "main" {
        Some(HeadRefusal::DefaultBranch)
    } else if pull.head_protected {
        Some(HeadRefusal::Protected)
    } else {
        None
    };
    let expected = match (policy.fix, refusal) {
        (FixPlace::Stacked, _) => PushKind::Stacked {
            pull: 8,
            instead: None,
        },
        (FixPlace::HeadBranch, None) => PushKind::HeadBranch { pull: 8 },
        (FixPlace::HeadBranch, Some(refusal)) => PushKind::Stacked {
            pull: 8,
            instead: Some(refusal),
        },
    };
    assert_eq!(push.kind, expected, "{case}");
}

#[test]
fn work_from_the_default_branch_trusts_the_default_branch() {
    for branch in ["main", "trunk"] {
        for policy in every_policy() {
            let origin = Origin::DefaultBranch {
                branch: branch.into(),
            };
            let decision = plan(&PlanInput {
                origin: &origin,
                bot: &bot(),
                policy: &policy,
                default_branch: branch,
            });
            assert_eq!(
                decision,
                Publish::Branch(PushPlan {
                    trusted_branch: branch.into(),
                    start: None,
                    pull_into: branch.into(),
                    kind: PushKind::DefaultBranch,
                })
            );
        }
    }
}

#[test]
fn a_failed_run_of_a_branch_without_a_pull_request_is_declined() {
    let origin = Origin::OrphanBranch {
        branch: "feature/y".into(),
    };
    let decision = plan(&PlanInput {
        origin: &origin,
        bot: &bot(),
        policy: &PullPolicy::default(),
        default_branch: "main",
    });
    let Publish::Decline(declined) = decision else {
        panic!("{decision:?}");
    };
    assert!(
        meta_agent_render::checks::declined(&declined).contains("`feature/y`"),
        "{declined:?}"
    );
}

#[test]
fn exclusion_globs_match_whole_branch_names() {
    let globs = |list: &[&str]| list.iter().map(|g| (*g).to_owned()).collect::<Vec<_>>();
    let cases = [
        (globs(&["release/*"]), "release/1.x", true),
        (globs(&["release/*"]), "release/1.x/hotfix", false),
        (globs(&["release/**"]), "release/1.x/hotfix", true),
        (
            globs(&["dependabot/**", "renovate/*"]),
            "renovate/lodash",
            true,
        ),
        (globs(&["*"]), "feature/x", false),
        (globs(&["feature"]), "feature/x", false),
        (globs(&["[unclosed"]), "[unclosed", true),
        (globs(&[]), "anything", false),
    ];
    for (globs, branch, excluded) in cases {
        assert_eq!(
            excluded_by(&globs, branch).is_some(),
            excluded,
            "{globs:?} {branch}"
        );
    }
}

fn commit(id: char, email: &str, session: Option<&str>) -> CommitSummary {
    let trailer = session.map_or(String::new(), |s| format!("\n\nMeta-Agent-Session: {s}\n"));
    CommitSummary {
        id: id.to_string().repeat(40),
        message: format!("fix: something{trailer}"),
        committer_email: email.into(),
    }
}

/// The new-commit lists a push can meet, each with whether it is all the session's own.
fn every_commit_list() -> Vec<(Vec<CommitSummary>, bool)> {
    let own = |id| commit(id, EMAIL, Some(SESSION));
    vec![
        (vec![], true),
        (vec![own('1')], true),
        (vec![own('1'), own('2')], true),
        (
            vec![own('1'), commit('2', "mallory@example.com", Some(SESSION))],
            false,
        ),
        (vec![own('1'), commit('2', EMAIL, Some("19a-2c"))], false),
        (vec![commit('1', EMAIL, None), own('2')], false),
        (vec![commit('1', "ALICE@example.com", None)], false),
        ((0..=MAX_NEW_COMMITS).map(|_| own('1')).collect(), false),
    ]
}

/// Every plan the decision can make.
fn every_decision() -> Vec<Publish> {
    let mut decisions: Vec<Publish> = Vec::new();
    for pull in every_pull() {
        for policy in every_policy() {
            let decision = decide(&pull, &Asked::Command, &policy);
            if !decisions.contains(&decision) {
                decisions.push(decision);
            }
        }
    }
    let origin = Origin::DefaultBranch {
        branch: "main".into(),
    };
    decisions.push(plan(&PlanInput {
        origin: &origin,
        bot: &bot(),
        policy: &PullPolicy::default(),
        default_branch: "main",
    }));
    decisions
}

/// Whose branch a push to `target` (whose remote tip is `tip`) may go to under `publish`, if
/// any: the pull request's own only under a head-branch plan and while it has not moved; else
/// one of the bot's that is neither the branch the work comes from nor the one it goes into.
fn allowed_onto(publish: &Publish, target: &str, tip: Option<&str>) -> Option<Onto> {
    let Publish::Branch(plan) = publish else {
        return None;
    };
    let head_plan = matches!(plan.kind, PushKind::HeadBranch { .. });
    if head_plan && target == plan.pull_into {
        return (tip == plan.start.as_deref()).then_some(Onto::PullHead);
    }
    let bots = target.starts_with("meta-agent/")
        && target != plan.trusted_branch
        && target != plan.pull_into;
    bots.then_some(Onto::BotsBranch)
}

#[test]
fn a_push_is_verified_only_for_a_push_plan_carrying_only_the_sessions_own_commits() {
    let decisions = every_decision();
    assert!(
        decisions.iter().any(
            |d| matches!(d, Publish::Branch(p) if matches!(p.kind, PushKind::HeadBranch { .. }))
        ),
        "head-branch plans are among the decisions"
    );
    for publish in &decisions {
        for (commits, all_own) in every_commit_list() {
            for target in ["meta-agent/fix-x", "meta-agent/other", "feature/x", "main"] {
                for tip in [Some(HEAD), Some(OTHER), None] {
                    let check = PushCheck {
                        publish,
                        tip: "f00d",
                        target,
                        session: SESSION,
                        bot_email: EMAIL,
                        new_commits: &commits,
                        target_tip: tip,
                    };
                    let verdict = judge_push(&check, "meta-agent/");
                    let onto = allowed_onto(publish, target, tip);
                    let case = format!("{publish:?} {target} {tip:?} {commits:?}: {verdict:?}");
                    assert_eq!(verdict.is_ok(), onto.is_some() && all_own, "{case}");
                    if let Ok(verified) = verdict {
                        assert_eq!((verified.tip(), verified.target()), ("f00d", target));
                        assert_eq!(Some(verified.onto()), onto, "{case}");
                    }
                }
            }
        }
    }
}

#[test]
fn refusals_say_why() {
    let offer = Publish::Patch(PatchOffer {
        pull: 8,
        head_sha: HEAD.into(),
        why: PatchOnly::Fork {
            head_repo: "mallory/calc".into(),
        },
    });
    let stranger = [commit('9', "mallory@example.com", None)];
    let check = |publish, commits, target, target_tip| PushCheck {
        publish,
        tip: "f00d",
        target,
        session: SESSION,
        bot_email: EMAIL,
        new_commits: commits,
        target_tip,
    };
    let bots = "meta-agent/fix-x";
    let err = judge_push(&check(&offer, &[], bots, None), "meta-agent/").unwrap_err();
    assert!(err.to_string().contains("mallory/calc"), "{err}");
    let origin = Origin::DefaultBranch {
        branch: "main".into(),
    };
    let branch = plan(&PlanInput {
        origin: &origin,
        bot: &bot(),
        policy: &PullPolicy::default(),
        default_branch: "main",
    });
    let err = judge_push(&check(&branch, &stranger, bots, None), "meta-agent/").unwrap_err();
    assert!(err.to_string().contains(&"9".repeat(40)), "{err}");
    assert!(err.to_string().contains("another committer"), "{err}");
    let closed = Publish::Decline(Declined::Closed { pull: 8 });
    let err = judge_push(&check(&closed, &[], bots, None), "meta-agent/").unwrap_err();
    assert!(err.to_string().contains("#8 is closed"), "{err}");
    let head_plan = Publish::Branch(PushPlan {
        trusted_branch: "feature/x".into(),
        start: Some(HEAD.into()),
        pull_into: "feature/x".into(),
        kind: PushKind::HeadBranch { pull: 8 },
    });
    let err = judge_push(
        &check(&head_plan, &[], "feature/x", Some(OTHER)),
        "meta-agent/",
    )
    .unwrap_err();
    assert!(
        matches!(err, PushRefusal::BranchMoved { .. }) && err.to_string().contains("never forces"),
        "{err}"
    );
}
