//! Every preset's toolchain runs under the default sandbox of a gate inside a run (writes
//! confined, network off, the default limits), through the real binary as supervisor: node
//! instantiating WebAssembly (V8 reserves far more address space than it uses), `go test` on a
//! tiny module, the JVM (`java -version` and a class compiled with `javac`), `cargo test` on a
//! tiny crate, and a Python interpreter from a virtualenv. A toolchain missing here fails the test
//! loudly (`scripts/test.sh` installs Go, the JDK and Node when they are missing): it never skips.

use std::path::Path;
use std::time::Duration;

use meta_agent::exec::env::child_env;
use meta_agent::exec::sandbox::{Isolation, NetworkPolicy};
use meta_agent::exec::{CommandOutput, CommandRunner, CommandSpec, Executor, Program};

/// A gate's isolation inside a run: the repository default, offline.
fn gate_isolation(env: &std::collections::BTreeMap<String, String>) -> Isolation {
    Isolation {
        network: NetworkPolicy::Off,
        ..Isolation::for_repository_commands(env, &[])
    }
}

/// Runs `line` with bash in `cwd` as a gate would run it, with this process's environment
/// filtered the way a gate's is.
async fn run_as_gate(line: &str, cwd: &Path) -> CommandOutput {
    let env = child_env(std::env::vars(), &[], []);
    let spec = CommandSpec {
        program: Program::Argv(vec!["bash".into(), "-c".into(), line.into()]),
        cwd: cwd.to_owned(),
        isolation: gate_isolation(&env),
        env,
        timeout: Duration::from_secs(240),
        kill_grace: Duration::from_millis(300),
        output_cap: 256 * 1024,
    };
    Executor::new(env!("CARGO_BIN_EXE_meta-agent").into())
        .run(spec)
        .await
        .unwrap()
}

/// Panics, naming the tool and who installs it, when `program` is not on PATH.
fn require(program: &str) {
    let path = std::env::var("PATH").unwrap_or_default();
    assert!(
        meta_agent::gates::runner::find_on_path(program, &path).is_some(),
        "`{program}` is not installed: this test needs it (scripts/test.sh installs it); it \
         never skips"
    );
}

fn assert_ran(out: &CommandOutput, expected: &str) {
    assert!(
        out.termination.success() && out.stdout.text.contains(expected),
        "expected `{expected}` and exit 0: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.termination,
        out.stdout.text,
        out.stderr.text
    );
}

/// `(module (memory 1) (func (export "add") (param i32 i32) (result i32) local.get 0 local.get
/// 1 i32.add))`: a module with a linear memory, for which V8 reserves its guard region.
const WASM_ADD: &str = "0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,5,3,1,0,1,7,7,1,3,\
                        97,100,100,0,0,10,9,1,7,0,32,0,32,1,106,11";

#[tokio::test]
async fn node_instantiates_webassembly_under_the_default_sandbox() {
    require("node");
    let work = tempfile::tempdir().unwrap();
    let script = format!(
        "WebAssembly.instantiate(new Uint8Array([{WASM_ADD}]))\
         .then(({{instance}}) => console.log('wasm add=' + instance.exports.add(2, 3)))\
         .catch((e) => {{ console.error(String(e)); process.exit(1); }});"
    );
    std::fs::write(work.path().join("wasm.js"), script).unwrap();
    let out = run_as_gate("node wasm.js", work.path()).await;
    assert_ran(&out, "wasm add=5");
}

#[tokio::test]
async fn go_test_runs_under_the_default_sandbox() {
    require("go");
    let work = tempfile::tempdir().unwrap();
    let files = [
        ("go.mod", "module example.com/tiny\n\ngo 1.19\n"),
        (
            "tiny.go",
            "package tiny\n\nfunc Add(a, b int) int { return a + b }\n",
        ),
        (
            "tiny_test.go",
            "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\
             \tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2 + 3 != 5\")\n\t}\n}\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(work.path().join(name), text).unwrap();
    }
    let out = run_as_gate("go test -count=1 -v ./...", work.path()).await;
    assert_ran(&out, "--- PASS: TestAdd");
}

#[tokio::test]
async fn the_jvm_runs_a_compiled_class_under_the_default_sandbox() {
    require("java");
    require("javac");
    let work = tempfile::tempdir().unwrap();
    let class = "public class Hello {\n  public static void main(String[] args) {\n    \
                 long[] block = new long[1 << 20];\n    block[7] = 42;\n    \
                 System.out.println(\"hello from the JVM \" + block[7]);\n  }\n}\n";
    std::fs::write(work.path().join("Hello.java"), class).unwrap();
    let line = "java -version && javac -d classes Hello.java && java -cp classes Hello";
    let out = run_as_gate(line, work.path()).await;
    assert_ran(&out, "hello from the JVM 42");
    assert!(out.stderr.text.contains("version"), "{}", out.stderr.text);
}

#[tokio::test]
async fn cargo_test_runs_under_the_default_sandbox() {
    require("cargo");
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("src")).unwrap();
    let manifest = "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    std::fs::write(work.path().join("Cargo.toml"), manifest).unwrap();
    let lib = "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    \
               #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n}\n";
    std::fs::write(work.path().join("src/lib.rs"), lib).unwrap();
    let out = run_as_gate("cargo test --offline 2>&1", work.path()).await;
    assert_ran(&out, "test tests::adds ... ok");
}

#[tokio::test]
async fn a_python_virtualenv_runs_under_the_default_sandbox() {
    require("python3");
    let work = tempfile::tempdir().unwrap();
    let line = "python3 -m venv --without-pip .venv && .venv/bin/python -c \
                'import sys; assert sys.prefix != sys.base_prefix; print(\"venv python\", \
                sys.version_info[0])'";
    let out = run_as_gate(line, work.path()).await;
    assert_ran(&out, "venv python 3");
}
