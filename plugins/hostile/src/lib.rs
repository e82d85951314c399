//! A hostile property for the sandbox tests. Its `mode` configuration picks
//! the misbehaviour; every mode must end as `error` (or a miss the host
//! refuses), never `holds`, with the host alive and the trees unchanged.
//! A mode that somehow succeeds returns `holds`, so a test sees the escape.
//! (`mtime-after-2001` is the exception: it holds when the host keeps its
//! promise of fixed file metadata, and misses when it does not.)

use agent_ledger_guest::{Finding, Guest, Info, Outcome, Trial, config, finding};
use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Iterations `describe` spins before it answers: well within the default
/// fuel budget, far beyond a budget of a million, so a test can tell
/// whether `describe` ran under the property's own limits.
const DESCRIBE_SPIN: u64 = 2_000_000;

/// 2001-01-01T00:00:00Z.
const YEAR_2001: u64 = 978_307_200;

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
        for i in 0..DESCRIBE_SPIN {
            black_box(i);
        }
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
            "sleep-hour" => {
                let start = std::time::Instant::now();
                std::thread::sleep(std::time::Duration::from_secs(3600));
                Err(format!(
                    "slept {} s of virtual time",
                    start.elapsed().as_secs()
                ))
            }
            "sleep-loop" => loop {
                std::thread::sleep(std::time::Duration::from_millis(1));
            },
            // A thousand sleeps (each a few host calls, almost no wasm),
            // then a finding: its fuel is what the host calls cost.
            "host-calls" => {
                for _ in 0..1000 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Ok(Outcome::Miss(vec![finding("", None, "slept 1000 times")]))
            }
            // Reads a file again and again: host work until the fuel ends.
            "read-loop" => loop {
                black_box(std::fs::read("/patched/src/retry.py").map(|b| b.len()).ok());
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
                Ok(Outcome::Miss(vec![finding("", None, "flooded stdout")]))
            }
            "panic" => panic!("hostile plugin panics on purpose"),
            "exit" => std::process::exit(0),
            "clock" => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                Ok(Outcome::Miss(vec![finding(
                    "",
                    None,
                    format!("wall clock reads {now}"),
                )]))
            }
            "mtime-after-2001" => mtime_after_2001(),
            "descriptors" => {
                let mut open = Vec::new();
                for _ in 0..10_000 {
                    match std::fs::File::open("/inputs/patch.diff") {
                        Ok(f) => open.push(f),
                        Err(e) => return Err(format!("open refused after {}: {e}", open.len())),
                    }
                }
                escaped(&format!("held {} descriptors", open.len()))
            }
            "findings" => {
                let count = config(&trial, "count")
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1);
                let bytes = config(&trial, "bytes")
                    .and_then(|b| b.parse().ok())
                    .unwrap_or(1);
                let message = "x".repeat(bytes);
                let one = finding("", None, message);
                Ok(Outcome::Miss(vec![one; count]))
            }
            "bad-finding" => Ok(Outcome::Miss(vec![finding(
                "../../etc/passwd",
                None,
                "outside",
            )])),
            "empty-miss" => Ok(Outcome::Miss(Vec::new())),
            // Holds, but prints a completion id past the kept excerpt, as a
            // property that called a model would.
            "called-model" => {
                println!("{}", "x".repeat(8 * 1024));
                println!(
                    "{{\"id\": \"chatcmpl-HostileReplayCall0123456789\", \"object\": \"chat.completion\"}}"
                );
                Ok(Outcome::Holds(Vec::new()))
            }
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

/// Stats everything under the three preopens. Misses naming the first entry
/// with a timestamp after 2000; otherwise holds with one finding that sums
/// up the walk (entries in the order read, types, sizes, times), so two runs
/// on identical trees must give byte-identical records.
fn mtime_after_2001() -> Result<Outcome, String> {
    let mut walk = String::new();
    let mut late = Vec::new();
    for root in ["/patched", "/base", "/inputs"] {
        visit(std::path::Path::new(root), &mut walk, &mut late)?;
    }
    if !late.is_empty() {
        return Ok(Outcome::Miss(late));
    }
    Ok(Outcome::Holds(vec![finding(
        "",
        None,
        format!(
            "{} entries, none after 2000; walk {:016x}",
            walk.lines().count(),
            fnv64(walk.as_bytes())
        ),
    )]))
}

fn visit(dir: &std::path::Path, walk: &mut String, late: &mut Vec<Finding>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let meta =
            std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let secs = |t: std::io::Result<SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .unwrap_or(Duration::ZERO)
                .as_secs()
        };
        let times = [
            ("modified", secs(meta.modified())),
            ("accessed", secs(meta.accessed())),
            ("created", secs(meta.created())),
        ];
        walk.push_str(&format!(
            "{} {:?} {}",
            path.display(),
            meta.file_type(),
            meta.len()
        ));
        for (name, t) in times {
            walk.push_str(&format!(" {t}"));
            if t > YEAR_2001 && late.len() < 10 {
                late.push(finding(
                    path.to_string_lossy().trim_start_matches('/'),
                    None,
                    format!("{name} at {t}, after 2000"),
                ));
            }
        }
        walk.push('\n');
        if meta.is_dir() {
            visit(&path, walk, late)?;
        }
    }
    Ok(())
}

fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

agent_ledger_guest::export!(Hostile with_types_in agent_ledger_guest);
