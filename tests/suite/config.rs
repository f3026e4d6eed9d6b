//! `.meta-agent.yml`: validation errors name file, line and key; presets; the JSON Schema.

use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::common::meta_agent;

fn repo_with_config(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".meta-agent.yml"), config).unwrap();
    dir
}

fn check(repo: &Path) -> assert_cmd::assert::Assert {
    meta_agent()
        .arg("--repo")
        .arg(repo)
        .args(["config", "check"])
        .assert()
}

#[test]
fn an_unknown_key_names_the_file_line_and_key() {
    let repo = repo_with_config(
        "version: 1\ngates:\n  - name: tests\n    run: make test\n    tmeout: 5m\n",
    );
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains(".meta-agent.yml:5:"))
        .stderr(predicate::str::contains("unknown field `tmeout`"));
}

#[test]
fn a_wrong_type_names_the_line_and_key() {
    let repo = repo_with_config("version: 1\nloop:\n  max_iterations: lots\n");
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains(".meta-agent.yml:3:"))
        .stderr(predicate::str::contains("max_iterations"));
}

#[test]
fn bad_values_are_caught_where_they_are_written() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: cov\n    run: make cov\n    coverage:\n      path: lcov.info\n      threshold: 150\n",
    );
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains("150 is not a percentage"));
    let repo =
        repo_with_config("version: 1\ngates:\n  - name: t\n    run: x\n    timeout: 10 minutes\n");
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains(".meta-agent.yml:5:"));
    let repo = repo_with_config("version: 2\n");
    check(repo.path()).code(2).stderr(predicate::str::contains(
        "schema version 2 is not supported",
    ));
}

#[test]
fn secrets_in_gate_environments_are_refused() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: t\n    run: make test\n    env:\n      GITHUB_TOKEN: abc\n",
    );
    check(repo.path()).code(2).stderr(predicate::str::contains(
        ".meta-agent.yml:7: gates.t.env.GITHUB_TOKEN",
    ));
    let repo = repo_with_config("version: 1\nsandbox:\n  env_allow: [OPENAI_API_KEY]\n");
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains("sandbox.env_allow"));
}

#[test]
fn duplicate_gates_and_escaping_workdirs_are_errors() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: t\n    run: a\n  - name: t\n    run: b\n",
    );
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains("gate `t` is defined twice"));
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: t\n    run: a\n    workdir: ../..\n",
    );
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains("inside the repository"));
}

#[test]
fn an_unknown_preset_lists_the_known_ones() {
    let repo = repo_with_config("version: 1\npreset: cobol\n");
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains("unknown preset `cobol`"))
        .stderr(predicate::str::contains("rust, python, node"));
}

#[test]
fn a_repository_without_config_gets_the_detected_preset() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"x\"\n",
    )
    .unwrap();
    check(dir.path())
        .success()
        .stdout(predicate::str::contains(
            "preset: python (pyproject.toml at the repository root; no `lint` gate: the project \
             configures no ruff",
        ))
        .stdout(predicate::str::contains(
            "- tests (tests): python3 -m pytest",
        ))
        .stdout(predicate::str::contains("- lint").not());
}

#[test]
fn rust_detection_reads_the_workspace_with_cargo_metadata() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"detected-crate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
    check(dir.path())
        .success()
        .stdout(predicate::str::contains(
            "Cargo workspace with 1 package(s): detected-crate",
        ))
        .stdout(predicate::str::contains(
            "- tests (tests): cargo nextest run",
        ));
}

#[test]
fn file_gates_override_preset_gates_field_by_field() {
    let dir = repo_with_config(
        "version: 1\npreset: python\ngates:\n  - name: lint\n    enabled: false\n  - name: tests\n    timeout: 1m\n  - name: docs\n    run: [make, docs]\n",
    );
    let out = check(dir.path()).success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(!stdout.contains("- lint"), "{stdout}");
    assert!(
        stdout.contains("- tests (tests): python3 -m pytest"),
        "{stdout}"
    );
    assert!(stdout.contains("- docs (custom): make docs"), "{stdout}");
}

#[test]
fn llm_flags_override_the_configuration() {
    let repo = repo_with_config(
        "version: 1\npreset: none\nllm:\n  provider: anthropic\n  model: from-file\n",
    );
    check(repo.path())
        .success()
        .stdout(predicate::str::contains(
            "llm: anthropic, from-file, default URL",
        ));
    meta_agent()
        .arg("--repo")
        .arg(repo.path())
        .args([
            "--llm-provider",
            "openai",
            "--model",
            "m2",
            "--llm-base-url",
            "http://127.0.0.1:9/v1",
        ])
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "llm: openai, m2, http://127.0.0.1:9/v1",
        ));
    meta_agent()
        .args(["--llm-provider", "bogus", "config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`bogus` is not a provider"));
}

#[test]
fn config_check_shows_the_wire_profile_and_refuses_an_unknown_one() {
    let repo = repo_with_config(
        "version: 1\npreset: none\nllm:\n  provider: openai\n  compat: vllm\n  stream: false\n  \
         reasoning_effort: low\n",
    );
    check(repo.path())
        .success()
        .stdout(predicate::str::contains(
            "llm wire: whole answers (llm.stream: false); compat vllm (output cap as max_tokens), \
         reasoning_effort low to reasoning models",
        ));
    let plain = repo_with_config("version: 1\npreset: none\nllm: {provider: openai}\n");
    check(plain.path())
        .success()
        .stdout(predicate::str::contains(
            "llm wire: streamed answers; compat openai (output cap as max_completion_tokens)\n",
        ));
    let bogus = repo_with_config("version: 1\npreset: none\nllm:\n  compat: lmstudio\n");
    check(bogus.path()).code(2).stderr(
        predicate::str::contains("lmstudio").and(predicate::str::contains(".meta-agent.yml:4:")),
    );
}

#[test]
fn the_schema_is_generated_from_the_types() {
    let out = meta_agent().args(["config", "schema"]).assert().success();
    let schema: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let properties = schema["properties"].as_object().unwrap();
    for section in [
        "version",
        "preset",
        "llm",
        "loop",
        "setup",
        "gates",
        "sandbox",
        "hindsight",
        "commit",
    ] {
        assert!(properties.contains_key(section), "schema lacks {section}");
    }
    assert_eq!(schema["additionalProperties"], serde_json::json!(false));
    let text = out.get_output().stdout.clone();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("max_iterations") && text.contains("threshold"));
}

#[test]
fn setup_and_gate_network_values_are_checked_where_they_are_written() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: t\n    run: make test\n    network: maybe\n",
    );
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains(".meta-agent.yml:6:"))
        .stderr(predicate::str::contains("unknown variant `maybe`"));
    let repo =
        repo_with_config("version: 1\npreset: none\nsetup:\n  - run: npm ci\n    tiemout: 5m\n");
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains(".meta-agent.yml:5:"))
        .stderr(predicate::str::contains("unknown field `tiemout`"));
    let repo = repo_with_config("version: 1\npreset: none\nsetup:\n  - run: \"  \"\n");
    check(repo.path()).code(2).stderr(predicate::str::contains(
        "setup[0].run: the command is empty",
    ));
    let repo = repo_with_config(
        "version: 1\npreset: none\nsetup:\n  - run: npm ci\n    env:\n      NPM_TOKEN: abc\n",
    );
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains("setup[0].env.NPM_TOKEN"));
    let repo = repo_with_config(
        "version: 1\npreset: none\nsetup:\n  - run: [npm, ci]\n    workdir: ../x\n",
    );
    check(repo.path())
        .code(2)
        .stderr(predicate::str::contains("setup[0].workdir"));
    let repo = repo_with_config(
        "version: 1\npreset: none\nsetup:\n  - run: [npm, ci]\n    timeout: 5m\ngates:\n  - name: t\n    run: make test\n    network: on\n",
    );
    check(repo.path()).success();
}

#[test]
fn gates_are_offline_by_default_and_presets_bring_their_setup_unless_the_file_replaces_it() {
    use meta_agent::config::raw::GateNetwork;
    use meta_agent::config::{GateCommand, parse_raw, preset, resolve};
    let path = Path::new(".meta-agent.yml");
    let text = "version: 1\nsetup:\n  - run: [pip, install, -e, .]\n    timeout: 2m\ngates:\n  - name: a\n    run: x\n  - name: b\n    run: y\n    network: on\n";
    let raw = parse_raw(text, path).unwrap();
    let config = resolve::resolve(resolve::ResolveInput {
        file: Some((path, &raw, text)),
        preset: None,
        preset_reason: String::new(),
    })
    .unwrap();
    let networks: Vec<GateNetwork> = config.gates.iter().map(|g| g.network).collect();
    assert_eq!(networks, [GateNetwork::Off, GateNetwork::On]);
    assert_eq!(config.setup.len(), 1);
    assert_eq!(
        config.setup[0].command,
        GateCommand::Argv(vec![
            "pip".into(),
            "install".into(),
            "-e".into(),
            ".".into()
        ])
    );
    assert_eq!(config.setup[0].timeout, std::time::Duration::from_secs(120));
    let rust = preset::preset_of("rust", path).unwrap();
    let setup = resolve::preset_setup("rust", &rust.setup).unwrap();
    assert!(
        matches!(&setup[..], [one] if matches!(&one.command, GateCommand::Shell(line) if line.contains("cargo fetch --locked"))),
        "{setup:?}"
    );
    let node = preset::preset_of("node", path).unwrap();
    assert!(
        node.setup
            .iter()
            .any(|s| format!("{:?}", s.run).contains("npm ci"))
    );
}

#[test]
fn a_rust_repository_gets_the_presets_setup_and_setup_empty_turns_it_off() {
    use meta_agent::config::{LoadInput, load};
    use meta_agent::exec::Executor;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let executor = Executor::new(PathBuf::from(env!("CARGO_BIN_EXE_meta-agent")));
    let env: Vec<(String, String)> = std::env::vars().collect();
    let load_now = || {
        runtime
            .block_on(load(
                LoadInput {
                    repo_root: dir.path(),
                    explicit: None,
                    parent_env: &env,
                    given: None,
                },
                &executor,
            ))
            .unwrap()
    };
    assert_eq!(load_now().setup.len(), 1, "the rust preset's cargo fetch");
    std::fs::write(
        dir.path().join(".meta-agent.yml"),
        "version: 1\nsetup: []\n",
    )
    .unwrap();
    assert!(load_now().setup.is_empty(), "`setup: []` runs none");
}

mod properties {
    use std::path::Path;
    use std::time::Duration;

    use meta_agent::config::{parse_raw, values};
    use proptest::prelude::*;

    const VALID: &str = "version: 1\npreset: python\nloop:\n  max_iterations: 2\ngates:\n  - name: t\n    run: [make, test]\n    timeout: 90s\n    junit: out/*.xml\n";

    proptest! {
        #[test]
        fn any_text_parses_or_fails_naming_the_file(text in "\\PC{0,300}") {
            if let Err(err) = parse_raw(&text, Path::new("conf.yml")) {
                prop_assert!(err.to_string().starts_with("conf.yml"), "{}", err);
            }
        }

        #[test]
        fn mutations_of_a_valid_file_never_panic(at in 0usize..VALID.len(), insert in "[ :\\-\\[\\]{}#a-z0-9\\n]{0,8}", cut in 0usize..8) {
            let mut text = VALID.to_owned();
            let at = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            let end = (at + cut).min(text.len());
            text.replace_range(at..end, &insert);
            if let Err(err) = parse_raw(&text, Path::new("conf.yml")) {
                prop_assert!(err.to_string().starts_with("conf.yml"), "{}", err);
            }
        }

        #[test]
        fn durations_with_units_add_up(h in 0u64..100, m in 0u64..60, s in 0u64..60, ms in 0u64..1000) {
            let text = format!("{h}h{m}m{s}s{ms}ms");
            let expected = Duration::from_secs(h * 3600 + m * 60 + s) + Duration::from_millis(ms);
            prop_assert_eq!(values::parse_duration(&text), Ok(expected));
        }

        #[test]
        fn sizes_with_units_multiply(n in 0u64..1_000_000) {
            prop_assert_eq!(values::parse_byte_size(&format!("{n}KiB")), Ok(n * 1024));
            prop_assert_eq!(values::parse_byte_size(&format!("{n}MB")), Ok(n * 1_000_000));
        }
    }

    #[test]
    fn the_valid_file_is_valid() {
        assert!(parse_raw(VALID, Path::new("conf.yml")).is_ok());
    }
}

#[test]
fn config_check_shows_the_setup_and_gates_that_keep_the_network() {
    let repo = repo_with_config(
        "version: 1\npreset: none\nsetup:\n  - run: [npm, ci]\ngates:\n  - name: e2e\n    run: npm run e2e\n    network: on\n  - name: unit\n    run: npm test\n",
    );
    check(repo.path())
        .success()
        .stdout(predicate::str::contains(
            "e2e (custom): npm run e2e [network: on",
        ))
        .stdout(predicate::str::contains("unit (custom): npm test\n"))
        .stdout(predicate::str::contains(
            "setup (once per run, before the build, network on):\n  - npm ci\n",
        ));
}

/// One policy, built from the configuration, is what the agent's tools, the tamper guard and the
/// patch gate all enforce: a custom `--config` path inside the repository, `.gitattributes`,
/// CODEOWNERS and the hindsight store are refused to the model's write tool and to an act's diff
/// alike (the model hears "no" at once instead of the patch gate refusing at the end).
#[test]
fn one_policy_from_the_configuration_governs_the_tools_and_the_guards() {
    use meta_agent::agent::tools::paths::{Access, resolve};
    use meta_agent::config::{LoadInput, load};
    use meta_agent::engine::tamper::{TamperKind, inspect};
    use meta_agent::exec::Executor;
    use meta_agent::policy::Policy;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("ci")).unwrap();
    std::fs::write(
        root.join("ci/bot.yml"),
        "version: 1\npreset: none\ngates: [{name: t, run: [make, test]}]\ncommit: {protected_paths: [\"vendor/**\"]}\nhindsight: {path: memory/fixes}\n",
    )
    .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let executor = Executor::new(PathBuf::from(env!("CARGO_BIN_EXE_meta-agent")));
    let explicit = root.join("ci/bot.yml");
    let config = runtime
        .block_on(load(
            LoadInput {
                repo_root: &root,
                explicit: Some(&explicit),
                parent_env: &[],
                given: None,
            },
            &executor,
        ))
        .unwrap();
    let policy = Policy::from_config(&config, &root);
    for path in [
        "ci/bot.yml",
        ".gitattributes",
        "CODEOWNERS",
        "vendor/lib.py",
        "memory/fixes/entries/ab/abcd.yaml",
    ] {
        let tool = resolve(&root, path, Access::Write(&policy));
        assert!(tool.is_err(), "the write tool let {path} through");
        let diff = format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"
        );
        let findings = inspect(&diff, &policy);
        assert!(
            findings
                .iter()
                .any(|f| f.kind == TamperKind::ProtectedFileChanged && f.path == path),
            "the tamper guard let {path} through: {findings:?}"
        );
    }
    assert!(resolve(&root, "src/calc.py", Access::Write(&policy)).is_ok());
    assert!(
        policy
            .protected_by("memory/fixes/entries/ab/abcd.yaml")
            .is_none()
    );
}

/// `setup[].credentials` names secret-looking variables only (so each is redacted everywhere and
/// kept from every other command); anything else is refused where it is written.
#[test]
fn setup_credentials_must_be_secret_looking_variable_names() {
    for (name, line) in [("MY_INDEX_URL", 5), ("not a name", 5)] {
        let repo = repo_with_config(&format!(
            "version: 1\npreset: none\nsetup:\n  - run: npm ci\n    credentials: [\"{name}\"]\n"
        ));
        check(repo.path())
            .code(2)
            .stderr(predicate::str::contains(format!(".meta-agent.yml:{line}:")))
            .stderr(predicate::str::contains("setup[0].credentials"))
            .stderr(predicate::str::contains(
                "not a secret-looking variable name",
            ));
    }
    let repo = repo_with_config(
        "version: 1\npreset: none\nsetup:\n  - run: npm ci\n    credentials: [NPM_TOKEN]\n",
    );
    check(repo.path()).success();
}
