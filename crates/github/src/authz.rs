//! Authorization, decided before anything else: the bot never reacts to itself; other bots only
//! when listed; people only with write, maintain or admin permission on the repository (asked of
//! GitHub's collaborator-permission endpoint by the caller). Pure.

use super::api::{Account, Permission};
use meta_agent_protocol::ignored::Ignored;

/// Who may trigger the bot, besides collaborators with write access.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The bot's own login (`github-actions[bot]` with the workflow token).
    pub bot_login: String,
    /// Bot accounts allowed to trigger it (e.g. `renovate[bot]`).
    pub allowed_bots: Vec<String>,
}

/// The first step: can the actor be decided without asking GitHub?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// Do nothing, say nothing (the bot itself, an unlisted bot).
    Ignore(Ignored),
    /// A listed bot.
    Allowed,
    /// A person: their permission decides.
    AskPermission,
}

/// The decision once the permission is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization {
    Allowed,
    /// Refused: the actor's permission is too low (the reason is shown to the actor as a
    /// reaction and in the job log).
    Refused {
        permission: Permission,
    },
}

/// Screens the actor.
pub fn screen(actor: &Account, policy: &Policy) -> Screen {
    let login = actor.login.as_str();
    if login.eq_ignore_ascii_case(&policy.bot_login) {
        return Screen::Ignore(Ignored::TheBotItself {
            login: login.to_owned(),
        });
    }
    if actor.is_bot() {
        return if policy
            .allowed_bots
            .iter()
            .any(|bot| bot.eq_ignore_ascii_case(login))
        {
            Screen::Allowed
        } else {
            Screen::Ignore(Ignored::UnlistedBot {
                login: login.to_owned(),
            })
        };
    }
    Screen::AskPermission
}

/// Decides on a person's permission.
pub fn decide(permission: Permission) -> Authorization {
    if permission.can_trigger() {
        Authorization::Allowed
    } else {
        Authorization::Refused { permission }
    }
}

/// Why `actor` may not trigger the bot (render writes it).
pub fn refusal(actor: &Account, permission: Permission) -> String {
    meta_agent_render::step::refused(&actor.login, permission.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(login: &str, kind: &str) -> Account {
        Account {
            login: login.into(),
            kind: kind.into(),
        }
    }

    fn policy() -> Policy {
        Policy {
            bot_login: "github-actions[bot]".into(),
            allowed_bots: vec!["renovate[bot]".into()],
        }
    }

    #[test]
    fn the_bot_and_unlisted_bots_are_ignored() {
        assert!(matches!(
            screen(&account("github-actions[bot]", "Bot"), &policy()),
            Screen::Ignore(_)
        ));
        assert!(matches!(
            screen(&account("dependabot[bot]", "Bot"), &policy()),
            Screen::Ignore(_)
        ));
        assert!(matches!(
            screen(&account("sneaky[bot]", "User"), &policy()),
            Screen::Ignore(_)
        ));
        assert_eq!(
            screen(&account("renovate[bot]", "Bot"), &policy()),
            Screen::Allowed
        );
        assert_eq!(
            screen(&account("alice", "User"), &policy()),
            Screen::AskPermission
        );
    }

    #[test]
    fn only_write_maintain_and_admin_may_trigger() {
        let alice = account("alice", "User");
        for permission in [Permission::Write, Permission::Maintain, Permission::Admin] {
            assert_eq!(decide(permission), Authorization::Allowed);
        }
        for permission in [Permission::Triage, Permission::Read, Permission::None] {
            assert_eq!(decide(permission), Authorization::Refused { permission });
            let reason = refusal(&alice, permission);
            assert!(reason.contains(permission.as_str()), "{reason}");
        }
    }
}
