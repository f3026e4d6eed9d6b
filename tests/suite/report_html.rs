//! End to end: `report.html` of a committed run and of an escalated one, opened in a real
//! headless Chromium (see `common::chromium`): no console message (a CSP violation is one), no
//! network request, the page's landmarks in order, and hostile text (a task title, a model's
//! answer and a test's failure message carrying `<script>`, `</details>` and an `onerror=`
//! attribute) shown as text. A control page proves the browser check sees what it must refuse.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::engine::{example_with, run_json};
use crate::common::chromium::{self, Opened};

const HOSTILE: &str = "<script>alert(1)</script></details><img src=x onerror=alert(2)>";

fn report_of(work: &Path, outcome: &Value) -> PathBuf {
    let path = work
        .join(".git/meta-agent/sessions")
        .join(outcome["session"].as_str().unwrap())
        .join("report.html");
    assert!(path.is_file(), "{} was written", path.display());
    path
}

/// Escalated: no model, and the failing test's message is hostile.
fn escalated(task: &str) -> (tempfile::TempDir, PathBuf, Value) {
    let (dir, work) = example_with(|work| {
        super::engine::wrong_mean(work);
        super::engine::edit(
            &work.join("tests/test_calc.py"),
            "assert calc.mean([1, 2, 3, 4]) == 2.5",
            &format!("assert calc.mean([1, 2, 3, 4]) == 2.5, {HOSTILE:?}"),
        );
    });
    let (code, _events, outcome) = run_json(&work, &["run", "--text", task]);
    assert_eq!(code, 4, "{outcome:#}");
    assert_eq!(outcome["outcome"], "escalated");
    (dir, work, outcome)
}

/// What every report page must be in the browser.
fn assert_clean(opened: &Opened, what: &str) {
    assert_eq!(
        opened.console,
        Vec::<String>::new(),
        "{what}: no console message"
    );
    let requested: Vec<&str> = opened.requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(requested, Vec::<&str>::new(), "{what}: no network request");
    assert_eq!(
        chromium::landmarks(&opened.dom),
        [
            "header",
            "main",
            "section#outcome",
            "section#timeline",
            "section#acts",
            "section#gates",
            "section#decisions",
            "footer"
        ],
        "{what}: the page's structure"
    );
    let dom = &opened.dom;
    assert!(!dom.contains("<script"), "{what}: no script element");
    assert!(!dom.contains("<img"), "{what}: no image element");
    assert_eq!(
        dom.matches("<details").count(),
        dom.matches("</details>").count(),
        "{what}: a hostile </details> closes nothing"
    );
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;/details&gt;&lt;img src=x onerror=alert(2)&gt;"),
        "{what}: the hostile text is shown as text"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn report_html_of_a_committed_run_opens_clean_in_chromium_with_hostile_text_as_text() {
    // The mock model fixes `mean`; its answer is hostile too.
    let (_dir, work, outcome) = super::replay::recorded_run_of(
        &format!("Fix mean {HOSTILE}"),
        &format!("true division {HOSTILE}"),
    )
    .await;
    let page = report_of(&work, &outcome);
    let opened = chromium::open(&page);
    assert_clean(&opened, "committed");
    assert!(
        opened
            .dom
            .contains("model call 1 (test-model): prompt and answer"),
        "each model call's prompt and answer, folded"
    );
    assert!(
        opened.dom.contains("[system]\n") && opened.dom.contains("[user]\n"),
        "the first call's prompt: the system and user messages"
    );
    assert!(
        opened
            .dom
            .contains("→ finish({\"summary\":\"true division &lt;script&gt;"),
        "the model's answer, as text"
    );
    assert!(
        opened.dom.contains("true division &lt;script&gt;"),
        "the model's answer is there"
    );
    assert!(
        opened
            .dom
            .contains("<span class=\"badge committed\">committed</span>")
    );
    assert!(
        opened.dom.contains("class=\"add\">+"),
        "the diff's added lines are marked"
    );
    let shot = tempfile::tempdir().unwrap();
    let png = shot.path().join("report.png");
    chromium::screenshot(&page, &png, 1100, 900);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    assert_eq!(width, 1100, "the screenshot is of the page's window");
    // `META_AGENT_TEST_SCREENSHOT=docs/report-html.png` keeps it (how the README's is made).
    if let Some(keep) = std::env::var_os("META_AGENT_TEST_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn report_html_of_an_escalated_run_opens_clean_in_chromium_with_hostile_text_as_text() {
    let task = format!("Fix mean {HOSTILE}");
    let (_dir, work, outcome) = tokio::task::spawn_blocking(move || escalated(&task))
        .await
        .unwrap();
    let opened = chromium::open(&report_of(&work, &outcome));
    assert_clean(&opened, "escalated");
    assert!(
        opened
            .dom
            .contains("<span class=\"badge escalated\">escalated</span>")
    );
    assert!(opened.dom.contains("Escalation report"));
    assert!(
        opened.dom.contains("failing test(s)"),
        "the failing tests are listed"
    );
}

#[test]
fn the_browser_check_sees_a_console_message_and_a_request_when_a_page_makes_them() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"http://example.com/x.png\">\
         <script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let opened = chromium::open(&page);
    assert!(
        opened.console.iter().any(|line| line.contains("boom")),
        "{:?}",
        opened.console
    );
    assert!(
        !opened.requests.is_empty(),
        "the image's request went through the proxy"
    );
}
