use super::*;

fn parse(text: &str) -> Result<Config> {
    Config::parse(text.as_bytes(), Path::new("repo/agent-ledger.toml"))
}

fn refusal(text: &str) -> String {
    let err = parse(text).unwrap_err();
    assert_eq!(err.exit_code(), crate::exit::Sysexit::Data, "{err}");
    let msg = err.to_string();
    assert!(msg.starts_with("`repo/agent-ledger.toml`: "), "{msg}");
    msg
}

#[test]
fn defaults_fill_everything_but_the_schema() {
    let c = parse("schema = 1\n").unwrap();
    assert_eq!(c.ledger, ".agent-ledger");
    assert_eq!(c.flakes.file, "flakes.toml");
    assert_eq!(c.flakes.max_days, 30);
    assert_eq!(
        c.tests.globs,
        [
            "tests/**",
            "**/*_test.go",
            "**/test_*.py",
            "**/*_test.py",
            "**/*.test.ts",
            "**/*.test.js",
            "**/*.spec.ts",
            "**/*.spec.js",
            "**/src/test/**",
        ]
    );
    assert!(c.fixtures.roots.is_empty());
    assert!(c.protect.paths.is_empty());
    assert!(c.properties.is_empty());
    assert_eq!(c.limits.fuel, None);
}

#[test]
fn absent_config_has_the_same_defaults() {
    let c = Config::absent();
    let parsed = parse("schema = 1\n").unwrap();
    assert_eq!(c.ledger, parsed.ledger);
    assert_eq!(c.tests.globs, parsed.tests.globs);
    assert_eq!(c.flakes.max_days, 30);
    assert!(c.fixtures.roots.is_empty());
}

#[test]
fn a_flakes_table_keeps_the_defaults_it_does_not_set() {
    let c = parse("schema = 1\n[flakes]\nmax_days = 7\n").unwrap();
    assert_eq!(c.flakes.file, "flakes.toml");
    assert_eq!(c.flakes.max_days, 7);
}

#[test]
fn the_design_example_parses() {
    let c = parse(
        r#"
schema = 1
ledger = ".agent-ledger"
[fixtures]
roots = ["tests/fixtures"]
[tests]
globs = ["tests/**", "**/*_test.go", "**/test_*.py", "**/*.test.ts"]
[protect]
paths = ["agent-ledger.toml", "flakes.toml", "oracles/**"]
[flakes]
file = "flakes.toml"
max_days = 30
[[property]]
name = "tests_not_deleted"
plugin = "builtin:tests_not_deleted"
[[property]]
name = "oracle_holds"
plugin = "oracles/oracle.wasm"
known_bad = "oracles/known-bad.diff"
[property.config]
max_latency_ms = "250"
"#,
    )
    .unwrap();
    assert_eq!(c.fixtures.roots, ["tests/fixtures"]);
    assert_eq!(c.properties.len(), 2);
    assert_eq!(c.properties[1].name, "oracle_holds");
    assert_eq!(
        c.properties[1].known_bad.as_deref(),
        Some("oracles/known-bad.diff")
    );
    assert_eq!(c.properties[1].config["max_latency_ms"], "250");
}

#[test]
fn unknown_key_is_refused_naming_it() {
    let msg = refusal("schema = 1\nledgr = \"x\"\n");
    assert!(msg.contains("invalid configuration"), "{msg}");
    assert!(msg.contains("unknown field `ledgr`"), "{msg}");
    let msg = refusal("schema = 1\n[fixtures]\nroot = [\"tests\"]\n");
    assert!(msg.contains("unknown field `root`"), "{msg}");
    let msg = refusal("schema = 1\n[[property]]\nname = \"a\"\nplugin = \"builtin:a\"\nfule = 1\n");
    assert!(msg.contains("unknown field `fule`"), "{msg}");
}

#[test]
fn a_capture_table_sets_live_capture_defaults() {
    let c = parse(
        "schema = 1\n[capture]\nendpoint = \"https://api.anthropic.com/v1\"\nprovider = \"anthropic\"\nmodel = \"claude-x\"\nstream = true\napi_key_env = \"MY_KEY\"\nmax_tokens = 4096\nconnect_timeout = 5\nidle_timeout = 60\n",
    )
    .unwrap()
    .capture;
    assert_eq!(c.endpoint.as_deref(), Some("https://api.anthropic.com/v1"));
    assert_eq!(c.provider, Some(crate::provider::Provider::Anthropic));
    assert_eq!(c.model.as_deref(), Some("claude-x"));
    assert_eq!(c.stream, Some(true));
    assert_eq!(c.api_key_env.as_deref(), Some("MY_KEY"));
    assert_eq!(c.max_tokens, Some(4096));
    assert_eq!((c.connect_timeout, c.idle_timeout), (Some(5), Some(60)));
    assert!(parse("schema = 1\n").unwrap().capture.max_tokens.is_none());
}

#[test]
fn a_capture_table_refuses_unknown_keys_zero_limits_and_bad_providers() {
    let msg = refusal("schema = 1\n[capture]\nmodle = \"x\"\n");
    assert!(msg.contains("unknown field `modle`"), "{msg}");
    assert!(msg.contains("(line 3, column 1)"), "{msg}");
    assert_eq!(
        refusal("schema = 1\n[capture]\nmax_tokens = 0\n"),
        "`repo/agent-ledger.toml`: `capture.max_tokens` is 0; it must be 1 or more"
    );
    let msg = refusal("schema = 1\n[capture]\nprovider = \"gemini\"\n");
    assert!(msg.contains("unknown variant `gemini`"), "{msg}");
}

// The key must never sit in a file that is committed and archived, nor
// be echoed by the refusal.
#[test]
fn a_capture_table_refuses_an_api_key_without_printing_it() {
    for text in [
        "schema = 1\n[capture]\napi_key = \"sk-secret-123\"\n",
        "schema = 1\n[capture]\napi_key = { value = \"sk-secret-123\" }\n",
    ] {
        let msg = refusal(text);
        assert!(msg.contains("never holds an API key"), "{msg}");
        assert!(!msg.contains("sk-secret-123"), "{msg}");
    }
    // A misspelt key name is refused without its value too.
    let msg = refusal("schema = 1\n[capture]\napikey = \"sk-secret-123\"\n");
    assert!(msg.contains("unknown field `apikey`"), "{msg}");
    assert!(!msg.contains("sk-secret-123"), "{msg}");
}

#[test]
fn newer_schema_is_refused() {
    assert_eq!(
        refusal("schema = 2\n"),
        "`repo/agent-ledger.toml`: field `schema` is 2; this build reads schema 1"
    );
}

#[test]
fn schema_zero_and_a_missing_schema_are_refused() {
    assert!(refusal("schema = 0\n").contains("field `schema` is 0"));
    assert!(refusal("ledger = \"x\"\n").contains("schema"));
}

#[test]
fn a_property_named_patch_applies_is_refused() {
    assert_eq!(
        refusal(
            "schema = 1\n[[property]]\nname = \"patch_applies\"\nplugin = \"builtin:tests_not_deleted\"\n"
        ),
        "`repo/agent-ledger.toml`: `property[0].name`: `patch_applies` is the host's own property"
    );
}

#[test]
fn duplicate_property_names_are_refused() {
    let text = "schema = 1\n\
        [[property]]\nname = \"oracle\"\nplugin = \"a.wasm\"\n\
        [[property]]\nname = \"other\"\nplugin = \"b.wasm\"\n\
        [[property]]\nname = \"oracle\"\nplugin = \"c.wasm\"\n";
    assert_eq!(
        refusal(text),
        "`repo/agent-ledger.toml`: `property[2].name`: `oracle` is listed twice"
    );
}

#[test]
fn a_property_name_outside_the_safe_alphabet_is_refused() {
    for name in ["", "a b", "../x", "é"] {
        let msg = refusal(&format!(
            "schema = 1\n[[property]]\nname = \"{name}\"\nplugin = \"builtin:x\"\n"
        ));
        assert!(
            msg.contains(&format!("`property[0].name` `{name}` must be letters")),
            "{msg}"
        );
    }
}

#[test]
fn a_bad_fixture_root_is_refused() {
    assert_eq!(
        refusal("schema = 1\n[fixtures]\nroots = [\"tests/fixtures\", \"../outside\"]\n"),
        "`repo/agent-ledger.toml`: `fixtures.roots`: fixture root `../outside` must be a relative path inside the repository"
    );
    assert!(refusal("schema = 1\n[fixtures]\nroots = [\"/etc\"]\n").contains("`/etc`"));
}

#[test]
fn a_configuration_that_is_not_utf8_is_refused() {
    let err = Config::parse(b"schema = 1\n\xff", Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert_eq!(err, "`c.toml`: configuration is not UTF-8");
}
