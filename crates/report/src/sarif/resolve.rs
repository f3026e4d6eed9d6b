//! Turns one parsed run into findings and counts: levels resolved against the run's rules,
//! messages looked up and trimmed, locations made readable. Pure; reads nothing.

use super::raw::{FullResult, Message, RawRun, Rule};
use super::uri::{UriBases, display_path};
use super::{Finding, FindingLevel, SarifReport};
use crate::{Limits, trim_to};

/// Adds `run`'s results to `report`: the kept ones in detail, the rest counted.
pub(super) fn add_run(report: &mut SarifReport, run: RawRun, limits: &Limits) {
    let rules = &run.tool.driver.rules;
    let tool = run.tool.driver.name.as_deref().unwrap_or("unknown tool");
    for result in &run.results.kept {
        let level = result.declared().resolve(rules);
        count(report, level, 1);
        report.results.push(finding(
            result,
            level,
            FindingContext {
                tool,
                rules,
                bases: &run.bases,
                limits,
            },
        ));
    }
    for (declared, n) in &run.results.counted {
        count(report, declared.resolve(rules), *n);
        report.results_omitted += n;
    }
}

fn count(report: &mut SarifReport, level: FindingLevel, n: u64) {
    report.findings += n;
    match level {
        FindingLevel::Error => report.errors += n,
        FindingLevel::Warning => report.warnings += n,
        FindingLevel::Note | FindingLevel::None => {}
    }
}

/// What a finding is read against: its run's tool, rules and base URIs.
struct FindingContext<'a> {
    tool: &'a str,
    rules: &'a [Rule],
    bases: &'a UriBases,
    limits: &'a Limits,
}

fn finding(result: &FullResult, level: FindingLevel, context: FindingContext<'_>) -> Finding {
    let key = result.rule_key();
    let rule = key.find(context.rules);
    let rule_id = key.id.clone().or_else(|| rule.and_then(|r| r.id.clone()));
    let message = message_text(&result.message, rule);
    let physical = result
        .locations
        .0
        .as_ref()
        .and_then(|l| l.physical_location.as_ref());
    let artifact = physical.and_then(|p| p.artifact_location.as_ref());
    let file = artifact.and_then(|a| {
        let uri = a.uri.as_deref()?;
        Some(display_path(uri, a.uri_base_id.as_deref(), context.bases))
    });
    let line = physical
        .and_then(|p| p.region.as_ref())
        .and_then(|r| r.start_line)
        .and_then(|l| u32::try_from(l).ok());
    Finding {
        tool: context.tool.to_owned(),
        rule_id,
        level,
        message: trim_to(&message, context.limits.max_message_bytes),
        file,
        line,
    }
}

/// The message text: its own `text`, else the rule's message string named by its `id`, with
/// `{0}`, `{1}`... replaced by its arguments.
fn message_text(message: &Message, rule: Option<&Rule>) -> String {
    let template = message.text.as_deref().or_else(|| {
        let id = message.id.as_deref()?;
        rule?.message_strings.get(id)?.text.as_deref()
    });
    let Some(template) = template else {
        return String::new();
    };
    if message.arguments.is_empty() {
        return template.to_owned();
    }
    message
        .arguments
        .iter()
        .enumerate()
        .fold(template.to_owned(), |text, (i, arg)| {
            text.replace(&format!("{{{i}}}"), arg)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sarif::level::Declared;

    #[test]
    fn message_strings_fill_in_arguments() {
        let mut rule = Rule::default();
        rule.message_strings.insert(
            "default".into(),
            Message {
                text: Some("'{0}' is unused in {1}".into()),
                ..Message::default()
            },
        );
        let message = Message {
            text: None,
            id: Some("default".into()),
            arguments: vec!["x".into(), "f".into()],
        };
        assert_eq!(message_text(&message, Some(&rule)), "'x' is unused in f");
        assert_eq!(message_text(&Message::default(), None), "");
    }

    #[test]
    fn declared_levels_are_counted() {
        let mut report = SarifReport::default();
        count(
            &mut report,
            Declared::Level(FindingLevel::Error).resolve(&[]),
            2,
        );
        count(&mut report, FindingLevel::Note, 1);
        assert_eq!((report.findings, report.errors, report.warnings), (3, 2, 0));
    }
}
