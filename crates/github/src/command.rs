//! The slash-command parser: `/agent fix [--allow-test-edits] [guidance]`, `/agent retry`,
//! `/agent continue [guidance]` and `/agent step` (a run paused at a pause point), `/agent stop`,
//! `/agent status`. Small and strict: the command is the comment's first non-blank line and must
//! start with the trigger phrase at the start of the line (a quoted `> /agent fix` or one inside
//! a code block is not a command); anything else is natural language and ignored. Pure.

/// A command a maintainer gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Start, or resume an escalated session, with optional guidance (the rest of the comment).
    /// `--allow-test-edits` right after `fix` lets this task change existing tests (every such
    /// change is listed in the pull request).
    Fix {
        guidance: Option<String>,
        allow_test_edits: bool,
    },
    /// Run again from the issue (or resume an escalated session without new guidance).
    Retry,
    /// Go on from a pause (`/agent continue [guidance]`), or to the next arrival at the same
    /// pause point (`/agent step`).
    Continue {
        guidance: Option<String>,
        step: bool,
    },
    /// Stop: no further automatic runs for this issue until `/agent fix`.
    Stop,
    /// Report the current state in the status comment.
    Status,
}

impl Command {
    pub fn verb(&self) -> &'static str {
        match self {
            Self::Fix { .. } => "fix",
            Self::Retry => "retry",
            Self::Continue { step: false, .. } => "continue",
            Self::Continue { step: true, .. } => "step",
            Self::Stop => "stop",
            Self::Status => "status",
        }
    }
}

/// What a comment says to the bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Not addressed to the bot.
    Ignored,
    Command(Command),
    /// Addressed to the bot with a word it does not know (answered with a short help).
    Unknown {
        word: String,
    },
}

/// The flag of `/agent fix` that allows test edits for the task.
pub const ALLOW_TEST_EDITS: &str = "--allow-test-edits";

/// The issue label that allows test edits for the task (like `/agent fix --allow-test-edits`).
pub const ALLOW_TEST_EDITS_LABEL: &str = "agent:allow-test-edits";

/// The longest guidance kept from one comment, in characters.
pub const MAX_GUIDANCE_CHARS: usize = 4_000;

/// Parses a comment body. `phrase` is the trigger phrase (`/agent` by default).
pub fn parse(body: &str, phrase: &str) -> Parsed {
    let phrase = phrase.trim();
    if phrase.is_empty() {
        return Parsed::Ignored;
    }
    let mut lines = body.lines().skip_while(|line| line.trim().is_empty());
    let Some(first) = lines.next() else {
        return Parsed::Ignored;
    };
    let first = first.trim_end();
    let Some(rest) = first.strip_prefix(phrase) else {
        return Parsed::Ignored;
    };
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return Parsed::Ignored;
    }
    let rest = rest.trim();
    let (word, tail) = rest
        .split_once(char::is_whitespace)
        .map_or((rest, ""), |(word, tail)| (word, tail.trim()));
    let following: Vec<&str> = lines.collect();
    match word {
        "" | "fix" => {
            let (allow_test_edits, tail) = match tail.strip_prefix(ALLOW_TEST_EDITS) {
                Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => {
                    (true, rest.trim())
                }
                Some(_) | None => (false, tail),
            };
            Parsed::Command(Command::Fix {
                guidance: guidance(tail, &following),
                allow_test_edits,
            })
        }
        "continue" => Parsed::Command(Command::Continue {
            guidance: guidance(tail, &following),
            step: false,
        }),
        "retry" | "stop" | "status" | "step" if tail.is_empty() => Parsed::Command(match word {
            "retry" => Command::Retry,
            "stop" => Command::Stop,
            "step" => Command::Continue {
                guidance: None,
                step: true,
            },
            _ => Command::Status,
        }),
        _ => Parsed::Unknown {
            word: word.chars().take(40).collect(),
        },
    }
}

fn guidance(tail: &str, following: &[&str]) -> Option<String> {
    let mut text = tail.to_owned();
    for line in following {
        text.push('\n');
        text.push_str(line);
    }
    let text = text.trim();
    (!text.is_empty()).then(|| text.chars().take(MAX_GUIDANCE_CHARS).collect())
}

/// The short help posted for an unknown command.
pub fn help(phrase: &str) -> String {
    format!(
        "Commands: `{phrase} fix [guidance]` (start, or resume with guidance), `{phrase} retry`, \
         `{phrase} continue [guidance]` and `{phrase} step` (a paused run), `{phrase} stop`, \
         `{phrase} status`."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_takes_guidance_and_step_takes_nothing() {
        assert_eq!(
            parse("/agent continue\nuse a guard\nfor empty lists", "/agent"),
            Parsed::Command(Command::Continue {
                guidance: Some("use a guard\nfor empty lists".into()),
                step: false,
            })
        );
        assert_eq!(
            parse("/agent continue", "/agent"),
            Parsed::Command(Command::Continue {
                guidance: None,
                step: false,
            })
        );
        assert_eq!(
            parse("/agent step", "/agent"),
            Parsed::Command(Command::Continue {
                guidance: None,
                step: true,
            })
        );
        assert!(matches!(
            parse("/agent step now", "/agent"),
            Parsed::Unknown { .. }
        ));
    }

    fn fix(guidance: Option<&str>) -> Parsed {
        Parsed::Command(Command::Fix {
            guidance: guidance.map(str::to_owned),
            allow_test_edits: false,
        })
    }

    #[test]
    fn allow_test_edits_is_a_flag_right_after_fix() {
        let allowed = |guidance: Option<&str>| {
            Parsed::Command(Command::Fix {
                guidance: guidance.map(str::to_owned),
                allow_test_edits: true,
            })
        };
        assert_eq!(
            parse("/agent fix --allow-test-edits", "/agent"),
            allowed(None)
        );
        assert_eq!(
            parse(
                "/agent fix --allow-test-edits the fixture is stale",
                "/agent"
            ),
            allowed(Some("the fixture is stale"))
        );
        assert_eq!(
            parse("/agent fix please --allow-test-edits", "/agent"),
            fix(Some("please --allow-test-edits")),
            "only right after `fix`"
        );
        assert_eq!(
            parse("/agent fix --allow-test-editsx", "/agent"),
            fix(Some("--allow-test-editsx"))
        );
    }

    #[test]
    fn commands_parse_strictly() {
        assert_eq!(parse("/agent fix", "/agent"), fix(None));
        assert_eq!(parse("/agent", "/agent"), fix(None));
        assert_eq!(parse("\n\n  \n/agent fix  ", "/agent"), fix(None));
        assert_eq!(
            parse("/agent fix use the cache\nand keep the API", "/agent"),
            fix(Some("use the cache\nand keep the API"))
        );
        assert_eq!(
            parse("/agent fix\nline two", "/agent"),
            fix(Some("line two"))
        );
        assert_eq!(
            parse("/agent retry", "/agent"),
            Parsed::Command(Command::Retry)
        );
        assert_eq!(
            parse("/agent stop", "/agent"),
            Parsed::Command(Command::Stop)
        );
        assert_eq!(
            parse("/agent status", "/agent"),
            Parsed::Command(Command::Status)
        );
        assert_eq!(
            parse("/agent retry now please", "/agent"),
            Parsed::Unknown {
                word: "retry".into()
            }
        );
        assert_eq!(
            parse("/agent deploy", "/agent"),
            Parsed::Unknown {
                word: "deploy".into()
            }
        );
    }

    #[test]
    fn natural_language_quotes_and_lookalikes_are_ignored() {
        for body in [
            "please /agent fix this",
            "> /agent fix",
            "```\n/agent fix\n```",
            "/agentfix",
            "/agents fix",
            "",
            "   ",
            "I think the agent should fix it",
        ] {
            assert_eq!(parse(body, "/agent"), Parsed::Ignored, "{body:?}");
        }
    }

    #[test]
    fn a_custom_trigger_phrase_is_honoured() {
        assert_eq!(parse("@meta-agent fix it", "@meta-agent"), fix(Some("it")));
        assert_eq!(parse("/agent fix", "@meta-agent"), Parsed::Ignored);
        assert_eq!(parse("/agent fix", ""), Parsed::Ignored);
    }

    #[test]
    fn guidance_is_capped() {
        let body = format!("/agent fix {}", "x".repeat(10_000));
        let Parsed::Command(Command::Fix {
            guidance: Some(text),
            ..
        }) = parse(&body, "/agent")
        else {
            panic!("not a fix");
        };
        assert_eq!(text.chars().count(), MAX_GUIDANCE_CHARS);
    }
}
