//! Outputs carry no secret in a simple reversible form the redactor recognises (issue #29,
//! point 6). The route: the model puts the key ROT13-encoded and with zero-width
//! characters between its letters in its finish summary; ours: the key in capitals, reversed
//! ROT13 and spread over spaces, and a text holding it gzipped and base64-encoded, in the same
//! summary. None reaches stdout or a session file.

use super::{KEY, broken_example, call, finish, fix, openai_llm, run};
use crate::common::mock_llm::MockLlm;

/// ROT13 of `text`.
fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='m' | 'A'..='M' => char::from(c as u8 + 13),
            'n'..='z' | 'N'..='Z' => char::from(c as u8 - 13),
            _ => c,
        })
        .collect()
}

/// The key's letters joined by `filler`.
fn spread(filler: &str) -> String {
    KEY.chars()
        .map(String::from)
        .collect::<Vec<_>>()
        .join(filler)
}

async fn assert_never_out(forms: &[String]) {
    let summary = format!("Fix mean\n\nnotes: {}", forms.join(" / "));
    let mock = MockLlm::start(vec![call("c_fix", "edit_file", &fix()), finish(&summary)]).await;
    let (_dir, work) = broken_example(&openai_llm(&mock.base_url), |_| {});
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    assert_eq!(ran.outcome["outcome"], "committed", "{}", ran.stdout);
    let mut outputs = vec![("stdout".to_owned(), ran.stdout.clone())];
    for name in ["report.md", "trace.jsonl", "audit.jsonl", "state.json"] {
        outputs.push((name.to_owned(), ran.session_file(&work, name)));
    }
    outputs.push((
        "commit".into(),
        crate::common::branch_message(&work, &ran.outcome),
    ));
    for (name, text) in &outputs {
        for form in forms {
            assert!(!text.contains(form.as_str()), "{form:?} in {name}: {text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rot13_or_zero_width_spread_key_never_reaches_an_output() {
    assert_never_out(&[rot13(KEY), spread("\u{200B}")]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_in_capitals_reversed_rot13_or_spread_over_spaces_never_does_either() {
    let reversed: String = rot13(KEY).chars().rev().collect();
    assert_never_out(&[KEY.to_uppercase(), reversed, spread(" ")]).await;
}

/// `text` gzipped, then base64-encoded (standard alphabet).
fn gzip_base64(text: &str) -> String {
    use base64::Engine as _;
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(text.as_bytes()).unwrap();
    base64::engine::general_purpose::STANDARD.encode(encoder.finish().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_inside_a_gzipped_and_base64_encoded_text_never_reaches_an_output() {
    assert_never_out(&[gzip_base64(&format!("deploy:\n  token: {KEY}\n"))]).await;
}
