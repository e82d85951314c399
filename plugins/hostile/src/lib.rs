//! A hostile property for the sandbox tests. Its `mode` configuration picks
//! the misbehaviour; every mode must end as `error` (or a miss the host
//! refuses), never `holds`, with the host alive and the trees unchanged.
//! A mode that somehow succeeds returns `holds`, so a test sees the escape.

use agent_ledger_guest::{Guest, Info, Outcome, Trial, config};
use std::hint::black_box;

struct Hostile;

fn escaped(what: &str) -> Result<Outcome, String> {
    println!("ESCAPED: {what}");
    Ok(Outcome::Holds(Vec::new()))
}

#[allow(unconditional_recursion)]
fn recurse(n: u64) -> u64 {
    black_box(recurse(black_box(n + 1)) + 1)
}

impl Guest for Hostile {
    fn describe() -> Info {
        Info {
            name: "hostile".into(),
            version: "0".into(),
            summary: "misbehaves on purpose".into(),
        }
    }

    fn check(trial: Trial) -> Result<Outcome, String> {
        let mode = config(&trial, "mode").unwrap_or("");
        match mode {
            "write" => match std::fs::write("/patched/src/retry.py", "pwned") {
                Ok(()) => escaped("wrote a file"),
                Err(e) => Err(format!("write refused: {e}")),
            },
            "create" => match std::fs::write("/patched/new-file.txt", "pwned") {
                Ok(()) => escaped("created a file"),
                Err(e) => Err(format!("create refused: {e}")),
            },
            "rename" => match std::fs::rename("/patched/src/retry.py", "/patched/src/moved.py") {
                Ok(()) => escaped("renamed a file"),
                Err(e) => Err(format!("rename refused: {e}")),
            },
            "delete" => match std::fs::remove_file("/patched/src/retry.py") {
                Ok(()) => escaped("deleted a file"),
                Err(e) => Err(format!("delete refused: {e}")),
            },
            "mkdir" => match std::fs::create_dir("/base/newdir") {
                Ok(()) => escaped("made a directory"),
                Err(e) => Err(format!("mkdir refused: {e}")),
            },
            "read-dotdot" => match std::fs::read_to_string("/patched/../../../../etc/passwd") {
                Ok(_) => escaped("read through .."),
                Err(e) => Err(format!("read refused: {e}")),
            },
            "read-absolute" => match std::fs::read_to_string("/etc/passwd") {
                Ok(_) => escaped("read an absolute path"),
                Err(e) => Err(format!("read refused: {e}")),
            },
            "read-symlink" => {
                let path = config(&trial, "path").unwrap_or("escape");
                match std::fs::read_to_string(format!("/patched/{path}")) {
                    Ok(_) => escaped("read through a symlink"),
                    Err(e) => Err(format!("read refused: {e}")),
                }
            }
            "env" => {
                let vars: Vec<_> = std::env::vars().collect();
                let args: Vec<_> = std::env::args().collect();
                if vars.is_empty() && args.is_empty() {
                    Err("no environment variables and no arguments".into())
                } else {
                    escaped(&format!(
                        "saw {} env vars and {} args",
                        vars.len(),
                        args.len()
                    ))
                }
            }
            "loop" => loop {
                black_box(0);
            },
            "sleep-loop" => loop {
                std::thread::sleep(std::time::Duration::from_millis(1));
            },
            "memory" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 16 << 20]);
                    black_box(&hoard);
                }
            }
            "recurse" => {
                recurse(0);
                escaped("survived unbounded recursion")
            }
            "flood" => {
                let line = "x".repeat(1023);
                for _ in 0..100_000 {
                    println!("{line}");
                }
                eprintln!("flooded");
                Ok(Outcome::Miss(vec![agent_ledger_guest::finding(
                    "",
                    None,
                    "flooded stdout",
                )]))
            }
            "panic" => panic!("hostile plugin panics on purpose"),
            "exit" => std::process::exit(0),
            "clock" => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                Ok(Outcome::Miss(vec![agent_ledger_guest::finding(
                    "",
                    None,
                    format!("wall clock reads {now}"),
                )]))
            }
            "bad-finding" => Ok(Outcome::Miss(vec![agent_ledger_guest::finding(
                "../../etc/passwd",
                None,
                "outside",
            )])),
            "empty-miss" => Ok(Outcome::Miss(Vec::new())),
            // Terminal control in every text a plugin hands back: a host
            // must print it inert, and keep it exact in JSON.
            "ansi-finding" => {
                println!("\x1b[2J\x1b[Hstdout says verdict: review");
                eprintln!("\x1b]0;owned\x07stderr\nverdict: review");
                Ok(Outcome::Miss(vec![agent_ledger_guest::finding(
                    "src/\x1b[2Jevil\u{202e}yp.py",
                    Some(1),
                    "\x1b[32mall good\x1b[0m\nverdict: review (exit 0) for run r",
                )]))
            }
            other => Err(format!("unknown mode `{other}`")),
        }
    }
}

agent_ledger_guest::export!(Hostile with_types_in agent_ledger_guest);
