//! JavaScript runners: mocha, jest, vitest and `node --test`, read from
//! `package.json`, their configuration files and the `test` script.

use super::{JEST_DEFAULT, JS_EXTS, Model, Runner, VITEST_DEFAULT};

/// The words of a shell command after the program `prog` (a word ending
/// in `prog`), up to the next `&&`, `;` or `|`.
fn args_after<'a>(script: &'a str, prog: &str) -> Option<Vec<&'a str>> {
    let words: Vec<&str> = script.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.trim_matches(['\'', '"']).rsplit('/').next() == Some(prog))?;
    Some(
        words[at + 1..]
            .iter()
            .take_while(|w| !matches!(**w, "&&" | ";" | "|" | "||"))
            .map(|w| w.trim_matches(['\'', '"']))
            .collect(),
    )
}

/// A mocha spec (a file, a directory or a glob) as globs.
fn mocha_spec(spec: &str, recursive: bool, exts: &str) -> String {
    let s = spec.trim_start_matches("./").trim_end_matches('/');
    if s.contains('*') || s.contains('{') || s.rsplit('/').next().is_some_and(|n| n.contains('.')) {
        s.to_string()
    } else if recursive {
        format!("{s}/**/*.{exts}")
    } else {
        format!("{s}/*.{exts}")
    }
}

pub(super) fn javascript(m: &mut Model, files: &[String], read: &dyn Fn(&str) -> Option<String>) {
    let Some(pkg) =
        read("package.json").and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    else {
        m.missing
            .push("package.json does not parse: no JavaScript runner read".into());
        return;
    };
    let script = pkg["scripts"]["test"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let dep = |n: &str| {
        ["dependencies", "devDependencies"]
            .iter()
            .any(|k| pkg[*k].get(n).is_some())
    };
    let file_like = |prefix: &str| {
        files
            .iter()
            .find(|f| !f.contains('/') && f.starts_with(prefix))
    };
    // mocha
    let mocharc = file_like(".mocharc");
    if mocharc.is_some() || pkg.get("mocha").is_some() || dep("mocha") || script.contains("mocha") {
        let mut specs: Vec<String> = Vec::new();
        let mut recursive = false;
        let mut exts = JS_EXTS.to_string();
        let mut from = Vec::new();
        if let Some(rc) = mocharc
            && (rc.ends_with(".js") || rc.ends_with(".cjs") || rc.ends_with(".mjs"))
        {
            m.missing.push(format!(
                "`{rc}` is code, not read: mocha's spec comes from the test script or its default; check `[tests] globs`"
            ));
        } else if let Some(rc) = mocharc
            && let Some(text) = read(rc)
        {
            from.push(rc.clone());
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                recursive |= v["recursive"].as_bool() == Some(true);
                match &v["spec"] {
                    serde_json::Value::String(s) => specs.push(s.clone()),
                    serde_json::Value::Array(a) => {
                        specs.extend(a.iter().filter_map(|x| x.as_str().map(str::to_string)))
                    }
                    _ => {}
                }
            } else {
                // YAML: `spec: x` or a `spec:` list.
                let mut in_spec = false;
                for line in text.lines() {
                    let t = line.trim();
                    if let Some(v) = t.strip_prefix("spec:") {
                        let v = v.trim().trim_matches(['\'', '"']);
                        if v.is_empty() {
                            in_spec = true;
                        } else {
                            specs.extend(
                                v.trim_matches(['[', ']'])
                                    .split(',')
                                    .map(|s| s.trim().trim_matches(['\'', '"']).to_string())
                                    .filter(|s| !s.is_empty()),
                            );
                        }
                        continue;
                    }
                    if in_spec && let Some(item) = t.strip_prefix('-') {
                        specs.push(item.trim().trim_matches(['\'', '"']).to_string());
                        continue;
                    }
                    in_spec = false;
                    if t.starts_with("recursive:") && t.contains("true") {
                        recursive = true;
                    }
                }
            }
        }
        if let Some(s) = pkg["mocha"]["spec"].as_str() {
            specs.push(s.to_string());
            from.push("package.json `mocha`".into());
        }
        if let Some(args) = args_after(&script, "mocha") {
            from.push("package.json `scripts.test`".into());
            // Options that take a value (their value is not a spec).
            const VALUED: &[&str] = &[
                "-r",
                "--require",
                "-R",
                "--reporter",
                "-O",
                "--reporter-option",
                "--reporter-options",
                "-u",
                "--ui",
                "-t",
                "--timeout",
                "-s",
                "--slow",
                "-g",
                "--grep",
                "-f",
                "--fgrep",
                "--file",
                "--config",
                "--package",
                "--ignore",
                "--exclude",
                "-j",
                "--jobs",
                "--retries",
                "--extension",
                "--watch-files",
                "--watch-ignore",
                "--node-option",
                "-n",
            ];
            let mut i = 0;
            while i < args.len() {
                let a = args[i];
                if a == "--recursive" {
                    recursive = true;
                } else if a == "--extension"
                    && let Some(e) = args.get(i + 1)
                {
                    exts = format!("{{js,cjs,mjs,{e}}}");
                }
                if VALUED.contains(&a) {
                    i += 2;
                    continue;
                }
                if !a.starts_with('-') && !a.contains('=') {
                    specs.push(a.to_string());
                }
                i += 1;
            }
        }
        if specs.is_empty() {
            specs.push("./test".into());
            from.push("defaults".into());
        }
        let mut globs: Vec<String> = specs
            .iter()
            .map(|s| mocha_spec(s, recursive, &exts))
            .collect();
        globs.dedup();
        m.runners.push(Runner {
            name: "mocha".into(),
            globs,
            command: "npx mocha --reporter xunit --reporter-option output=\"$AGENT_LEDGER_JUNIT\""
                .into(),
            from: from.join(", "),
        });
    }
    // jest
    let jest_config = files
        .iter()
        .find(|f| !f.contains('/') && f.starts_with("jest.config"));
    if jest_config.is_some() || pkg.get("jest").is_some() || dep("jest") || script.contains("jest")
    {
        let mut globs: Vec<String> = Vec::new();
        let mut from = "defaults".to_string();
        if pkg["jest"].get("testRegex").is_some() {
            m.missing.push(
                "jest `testRegex` is not read: its default testMatch is used; check `[tests] globs`"
                    .into(),
            );
        }
        if let Some(a) = pkg["jest"]["testMatch"].as_array() {
            let listed: Vec<String> = a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect();
            // Extended globs (`?(…)`, `+(…)`) have no equivalent here.
            if listed.iter().all(|g| {
                !g.contains("?(") && !g.contains("+(") && !g.contains("@(") && !g.contains("!(")
            }) {
                globs = listed
                    .iter()
                    .map(|g| g.trim_start_matches("<rootDir>/").to_string())
                    .collect();
                from = "package.json `jest.testMatch`".into();
            } else {
                m.missing.push("jest `testMatch` uses extended globs: its defaults are used instead; check `[tests] globs`".into());
            }
        } else if let Some(c) = jest_config {
            m.missing.push(format!(
                "`{c}` is code, not read: jest's default testMatch is used; check `[tests] globs`"
            ));
        }
        if globs.is_empty() {
            globs = JEST_DEFAULT.iter().map(|s| s.to_string()).collect();
            if let Some(roots) = pkg["jest"]["roots"].as_array() {
                let roots: Vec<&str> = roots.iter().filter_map(|r| r.as_str()).collect();
                globs = roots
                    .iter()
                    .flat_map(|r| {
                        let r = r.trim_start_matches("<rootDir>").trim_matches('/');
                        JEST_DEFAULT.iter().map(move |g| {
                            if r.is_empty() {
                                g.to_string()
                            } else {
                                format!("{r}/{g}")
                            }
                        })
                    })
                    .collect();
                from = "package.json `jest.roots`".into();
            }
        }
        m.runners.push(Runner {
            name: "jest".into(),
            globs,
            command: "npx jest --ci --reporters=default --reporters=jest-junit (JEST_JUNIT_OUTPUT_FILE=\"$AGENT_LEDGER_JUNIT\")".into(),
            from,
        });
    }
    // vitest
    let vitest_config = files.iter().find(|f| {
        !f.contains('/') && (f.starts_with("vitest.config") || f.starts_with("vite.config"))
    });
    if dep("vitest")
        || script.contains("vitest")
        || files
            .iter()
            .any(|f| !f.contains('/') && f.starts_with("vitest.config"))
    {
        let mut globs = Vec::new();
        let mut from = "defaults".to_string();
        if let Some(c) = vitest_config
            && let Some(text) = read(c)
            && let Some(at) = test_include(&text)
        {
            let rest = &text[at + "include:".len()..];
            if let (Some(open), Some(close)) = (rest.find('['), rest.find(']'))
                && open < close
            {
                for part in rest[open + 1..close].split(',') {
                    let g = part.trim().trim_matches(['\'', '"', '`']);
                    if !g.is_empty() {
                        globs.push(g.trim_start_matches("./").to_string());
                    }
                }
                from = format!("`{c}` `include`");
            }
        }
        if globs.is_empty() {
            globs.push(VITEST_DEFAULT.into());
        }
        m.runners.push(Runner {
            name: "vitest".into(),
            globs,
            command: "npx vitest run --reporter=junit --outputFile=\"$AGENT_LEDGER_JUNIT\"".into(),
            from,
        });
    }
    if script.contains("node --test") {
        m.runners.push(Runner {
            name: "node --test".into(),
            globs: [
                "**/*.test.{js,cjs,mjs}",
                "**/*-test.{js,cjs,mjs}",
                "**/*_test.{js,cjs,mjs}",
                "**/test-*.{js,cjs,mjs}",
                "**/test.{js,cjs,mjs}",
                "**/test/**/*.{js,cjs,mjs}",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            command: "node --test --test-reporter=junit --test-reporter-destination=\"$AGENT_LEDGER_JUNIT\"".into(),
            from: "package.json `scripts.test`".into(),
        });
    }
    if !m
        .runners
        .iter()
        .any(|r| matches!(r.name.as_str(), "mocha" | "jest" | "vitest" | "node --test"))
    {
        m.missing.push(format!(
            "package.json names no test runner agent-ledger reads (scripts.test: `{}`): list the test globs by hand",
            script
        ));
    }
}

/// Where vitest's own `test.include` list starts in a config file: an
/// `include:` directly inside the object after `test:` (not one nested
/// deeper, such as `coverage.include`, which names source files).
fn test_include(text: &str) -> Option<usize> {
    let start = text.find("test:").or_else(|| text.find("test :"))?;
    let open = start + text[start..].find('{')?;
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return None;
                }
            }
            _ if depth == 1 && b[i..].starts_with(b"include:") => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}
