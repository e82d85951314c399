use agent_ledger::cli::Cli;
use agent_ledger::exit::{ExitCode, Sysexit};
use clap::Parser;
use clap::error::ErrorKind;

/// Raises the soft limit on open descriptors to the hard limit (at most
/// 2^20): properties run in parallel, each with its own descriptor cap, and
/// the soft limit is often 1024 where the hard one is far higher. Where it
/// cannot be raised, the limit stays as it is.
fn raise_descriptor_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let want = hard.min(1 << 20);
        if want > soft {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, want, hard);
        }
    }
}

fn main() {
    // The sandbox's loopback helper (`netns::loopback_only`) does its one
    // job and exits before anything else is read.
    agent_ledger::netns::loopback_helper();
    // A run key handed over on a descriptor is read (and the descriptor
    // closed) before anything else runs or is started.
    if let Err(err) = agent_ledger::trace::preload_fd_key() {
        eprintln!("error: {}", agent_ledger::output::inert(&err.to_string()));
        std::process::exit(ExitCode::Sysexit(err.exit_code()).code());
    }
    // So is a shared compile-cache key, which no child may inherit.
    if let Err(err) = agent_ledger::wasm::preload_env_key() {
        eprintln!("error: {}", agent_ledger::output::inert(&err));
        std::process::exit(ExitCode::Sysexit(Sysexit::Usage).code());
    }
    raise_descriptor_limit();
    // No thread may start here: `check`, `replay` and `verify --replay`
    // enter a new user namespace first thing, which the kernel refuses to a
    // process with more than one (`netns::isolate`); `cli::start_threads`
    // builds the thread pool after.
    // A caller that asked for JSON gets one JSON document on stdout even
    // when the command fails (the message stays on stderr too).
    let json = agent_ledger::output::json_requested(std::env::args_os().skip(1));
    let json_error = |exit: Sysexit, message: &str| {
        if json && !agent_ledger::output::json_printed() {
            let doc = agent_ledger::output::ErrorDocument::new(exit, message);
            let _ = agent_ledger::output::print_json(&doc);
        }
    };
    let code = match Cli::try_parse() {
        Ok(cli) => match cli.execute() {
            Ok(code) => code,
            Err(err) => {
                let mut msg = err.to_string();
                let mut source = std::error::Error::source(&err);
                while let Some(s) = source {
                    msg.push_str(&format!(": {s}"));
                    source = s.source();
                }
                // Errors quote paths, git's stderr and record fields: one
                // line, nothing a terminal would act on.
                eprintln!("error: {}", agent_ledger::output::inert(&msg));
                json_error(err.exit_code(), &msg);
                ExitCode::Sysexit(err.exit_code())
            }
        },
        Err(err) => {
            // clap's own usage error exits 2, which is a verdict code here.
            let _ = err.print();
            match err.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::Ok,
                _ => {
                    let text = err.render().to_string();
                    let first = text.lines().next().unwrap_or_default();
                    json_error(
                        Sysexit::Usage,
                        first.strip_prefix("error: ").unwrap_or(first),
                    );
                    ExitCode::Sysexit(Sysexit::Usage)
                }
            }
        }
    };
    std::process::exit(code.code());
}
