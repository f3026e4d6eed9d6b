//! The two decisions over every combination of the facts they read.

use super::*;

const BOT: &str = "github-actions[bot]";
const EMAIL: &str = "meta-agent@users.noreply.github.com";
const SESSION: &str = "19a-2b";

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
            for head_ref in ["meta-agent/fix-x", "feature/x", "main"] {
                for (open, draft, maintainer_can_modify) in
                    (0..8).map(|bits| (bits & 1 == 1, bits & 2 == 2, bits & 4 == 4))
                {
                    pulls.push(PullFacts {
                        number: 8,
                        head_repo: head_repo.map(str::to_owned),
                        head_ref: head_ref.into(),
                        head_sha: "a".repeat(40),
                        base_ref: "main".into(),
                        maintainer_can_modify,
                        draft,
                        author: author.into(),
                        open,
                    });
                }
            }
        }
    }
    pulls
}

#[test]
fn a_fork_never_gets_a_branch_and_a_same_repository_pull_request_trusts_only_its_own_head() {
    let bot = bot();
    for pull in every_pull() {
        let decision = plan(&Origin::PullRequest(pull.clone()), &bot);
        let same = pull
            .head_repo
            .as_deref()
            .is_some_and(|repo| repo.eq_ignore_ascii_case("octo/calc"));
        match (&decision, pull.open, same) {
            (Publish::Decline(Declined::Closed { pull: 8 }), false, _) => {}
            (Publish::Patch(offer), true, false) => {
                assert_eq!(offer.head_sha, pull.head_sha, "{pull:?}");
                assert_eq!(
                    offer.why == PatchOnly::DeletedFork,
                    pull.head_repo.is_none(),
                    "{pull:?}"
                );
            }
            (Publish::Branch(push), true, true) => {
                let bots_own = pull.author == BOT && pull.head_ref.starts_with("meta-agent/");
                if bots_own {
                    assert_eq!(push.kind, PushKind::BotsOwnPull { pull: 8 });
                    assert_eq!(push.trusted_branch, pull.base_ref);
                    assert_eq!(push.start, None);
                } else {
                    assert_eq!(push.kind, PushKind::Stacked { pull: 8 });
                    assert_eq!(push.trusted_branch, pull.head_ref, "{pull:?}");
                    assert_eq!(push.pull_into, pull.head_ref, "{pull:?}");
                    assert_eq!(push.start.as_deref(), Some(pull.head_sha.as_str()));
                }
            }
            _ => panic!("{pull:?} decided {decision:?}"),
        }
    }
}

#[test]
fn work_from_the_default_branch_trusts_the_default_branch() {
    for branch in ["main", "trunk"] {
        let decision = plan(
            &Origin::DefaultBranch {
                branch: branch.into(),
            },
            &bot(),
        );
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

#[test]
fn a_push_is_verified_only_for_a_push_plan_carrying_only_the_sessions_own_commits() {
    let bot = bot();
    let mut decisions: Vec<Publish> = every_pull()
        .into_iter()
        .map(|pull| plan(&Origin::PullRequest(pull), &bot))
        .collect();
    decisions.push(plan(
        &Origin::DefaultBranch {
            branch: "main".into(),
        },
        &bot,
    ));
    for publish in &decisions {
        for (commits, all_own) in every_commit_list() {
            for target in ["meta-agent/fix-x", "feature/x", "main"] {
                let check = PushCheck {
                    publish,
                    tip: "f00d",
                    target,
                    session: SESSION,
                    bot_email: EMAIL,
                    new_commits: &commits,
                };
                let verdict = judge_push(&check, "meta-agent/");
                let allowed = match publish {
                    Publish::Branch(plan) => {
                        all_own
                            && target.starts_with("meta-agent/")
                            && target != plan.trusted_branch
                            && target != plan.pull_into
                    }
                    Publish::Patch(_) | Publish::Decline(_) => false,
                };
                assert_eq!(
                    verdict.is_ok(),
                    allowed,
                    "{publish:?} {target} {commits:?}: {verdict:?}"
                );
                if let Ok(verified) = verdict {
                    assert_eq!((verified.tip(), verified.target()), ("f00d", target));
                }
            }
        }
    }
}

#[test]
fn refusals_say_why() {
    let offer = Publish::Patch(PatchOffer {
        pull: 8,
        head_sha: "a".repeat(40),
        why: PatchOnly::Fork {
            head_repo: "mallory/calc".into(),
        },
    });
    let stranger = [commit('9', "mallory@example.com", None)];
    let check = |publish, commits| PushCheck {
        publish,
        tip: "f00d",
        target: "meta-agent/fix-x",
        session: SESSION,
        bot_email: EMAIL,
        new_commits: commits,
    };
    let err = judge_push(&check(&offer, &[]), "meta-agent/").unwrap_err();
    assert!(err.to_string().contains("mallory/calc"), "{err}");
    let branch = plan(
        &Origin::DefaultBranch {
            branch: "main".into(),
        },
        &bot(),
    );
    let err = judge_push(&check(&branch, &stranger), "meta-agent/").unwrap_err();
    assert!(err.to_string().contains(&"9".repeat(40)), "{err}");
    assert!(err.to_string().contains("another committer"), "{err}");
    let closed = Publish::Decline(Declined::Closed { pull: 8 });
    let err = judge_push(&check(&closed, &[]), "meta-agent/").unwrap_err();
    assert!(err.to_string().contains("#8 is closed"), "{err}");
}
