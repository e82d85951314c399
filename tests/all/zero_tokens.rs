//! Zero tokens after capture: the replay has no route to any endpoint, the
//! verdict carries a token ledger, and a replay whose output shows another
//! completion than the captured one is `reject` (`endpoint_coupled`).

use crate::support::*;
use crate::test_sandbox::{PASS, Trial, attack, without_user_namespaces};

const CAPTURED: &str = "chatcmpl-CapturedCompletion0123456789";
const OTHER: &str = "chatcmpl-ReplayTalkedToAModel0123456789";

/// The good patch as an OpenAI chat completion with usage.
fn chat_body(dir: &std::path::Path) -> std::path::PathBuf {
    let good = std::fs::read_to_string(fixture("patches/good.diff")).unwrap();
    let body = serde_json::json!({
        "id": CAPTURED,
        "object": "chat.completion",
        "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": good}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 340, "total_tokens": 1540}
    });
    let path = dir.join("body.json");
    write(&path, serde_json::to_vec(&body).unwrap());
    path
}

fn capture_chat(trial: &Trial, run: &str) {
    let scratch = tempdir();
    let body = chat_body(scratch.path());
    run_capture(trial, run, &body);
}

fn run_capture(trial: &Trial, run_id: &str, body: &std::path::Path) {
    run(
        trial.repo.path(),
        &[
            "capture",
            "--run",
            run_id,
            "--body",
            body.to_str().unwrap(),
            "--body-format",
            "openai-chat",
        ],
    )
    .assert_code(0);
}

fn verdict(trial: &Trial, run: &str) -> serde_json::Value {
    let bytes = std::fs::read(
        trial
            .repo
            .path()
            .join(format!(".agent-ledger/verdicts/{run}.json")),
    )
    .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn check_chat(trial: &Trial, run: &str, cmd: &str) -> (i32, String) {
    let out = trial
        .command_for(run, &["--test-cmd", cmd])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_verdict_carries_the_token_ledger_and_the_replay_is_isolated() {
    let trial = Trial::new();
    capture_chat(&trial, "c");
    let (code, stderr) = check_chat(&trial, "c", PASS);
    assert_eq!(code, 0, "{stderr}");
    let v = verdict(&trial, "c");
    assert_eq!(
        v["tokens"]["capture"],
        serde_json::json!({"input_tokens": 1200, "output_tokens": 340, "total_tokens": 1540})
    );
    assert_eq!(v["tokens"]["after_capture"], 0, "{v:#}");
    assert_eq!(trial.repo.properties("c")["network"], "isolated");
    // The verdict follows from the records, token ledger included.
    run(trial.repo.path(), &["verify", "--run", "c"]).assert_code(0);
}

#[test]
fn a_test_command_that_prints_another_completion_id_is_endpoint_coupled() {
    let trial = Trial::new();
    capture_chat(&trial, "c");
    // The suite passes, so without the rule this is `review`.
    let cmd = format!("echo '{{\"id\": \"{OTHER}\"}}'; {PASS}");
    let (code, stderr) = check_chat(&trial, "c", &cmd);
    assert_eq!(code, 4, "{stderr}");
    let v = verdict(&trial, "c");
    assert_eq!(v["verdict"], "reject");
    assert_eq!(v["reasons"][0]["code"], "endpoint_coupled", "{v:#}");
    let message = v["reasons"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(OTHER) && message.contains("the test command"),
        "{message}"
    );
    assert!(v["tokens"]["after_capture"].is_null(), "{v:#}");
    assert_eq!(
        trial.repo.properties("c")["test_run"]["completion_ids"],
        serde_json::json!([OTHER])
    );
    run(trial.repo.path(), &["verify", "--run", "c"]).assert_code(0);
}

#[test]
fn printing_the_captured_completion_id_is_not_a_call() {
    let trial = Trial::new();
    capture_chat(&trial, "c");
    let cmd = format!("echo 'replaying {CAPTURED}'; {PASS}");
    let (code, stderr) = check_chat(&trial, "c", &cmd);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(verdict(&trial, "c")["verdict"], "review");
}

#[test]
fn a_property_that_prints_a_completion_id_past_its_excerpt_is_endpoint_coupled() {
    let repo = DemoRepo::new();
    repo.capture("r", "good");
    let dir = tempdir();
    let config = dir.path().join("c.toml");
    let hostile = component("hostile");
    write(
        &config,
        format!(
            "schema = 1\n[fixtures]\nroots = [\"tests/fixtures\"]\n\
             [[property]]\nname = \"quiet\"\nplugin = {hostile:?}\n[property.config]\nmode = \"called-model\"\n"
        ),
    );
    let out = repo.check("r", &["--config", config.to_str().unwrap()]);
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(
        v["verdict"]["reasons"][0]["code"], "endpoint_coupled",
        "{v:#}"
    );
    let props = repo.properties("r");
    let p = outcome(&props, "quiet");
    // It held, and the id is past what the record keeps of its stdout.
    assert_eq!(p["outcome"], "holds");
    assert!(!p["stdout"].as_str().unwrap().contains("chatcmpl-"));
    assert_eq!(
        p["completion_ids"],
        serde_json::json!(["chatcmpl-HostileReplayCall0123456789"])
    );
}

/// Even a test command the kernel would not sandbox (run anyway under
/// `--allow-unsandboxed`) cannot reach a server this machine's loopback
/// serves: the whole check left the network first.
#[test]
fn an_unsandboxed_test_command_has_no_route_to_a_local_endpoint() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=3)'"
    );
    // Positive control: from here, the endpoint answers.
    let ok = std::process::Command::new("sh")
        .args(["-c", &connect])
        .status()
        .expect("python3 is needed for this test");
    assert!(ok.success(), "the control connection failed");

    let trial = Trial::new();
    let out = without_user_namespaces(trial.command(&[
        "--test-cmd",
        &attack(&connect),
        "--allow-unsandboxed",
        // The attack is the test command: on the base it fails the same
        // way, which the baseline would not count.
        "--no-test-baseline",
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let record = trial.repo.properties("r");
    assert_eq!(record["test_run"]["sandbox"], "none", "{record:#}");
    assert_eq!(record["network"], "isolated", "{record:#}");
    assert_eq!(
        outcome(&record, "tests_pass")["outcome"],
        "miss",
        "{record:#}"
    );
}
