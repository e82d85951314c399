use agent_ledger::cli::Cli;
use agent_ledger::exit::{ExitCode, Sysexit};
use clap::Parser;
use clap::error::ErrorKind;

fn main() {
    // A run key handed over on a descriptor is read (and the descriptor
    // closed) before anything else runs or is started.
    if let Err(err) = agent_ledger::trace::preload_fd_key() {
        eprintln!("error: {}", agent_ledger::output::inert(&err.to_string()));
        std::process::exit(ExitCode::Sysexit(err.exit_code()).code());
    }
    let code = match Cli::try_parse() {
        Ok(cli) => match cli.execute() {
            Ok(code) => code,
            Err(err) => {
                let mut msg = format!("error: {err}");
                let mut source = std::error::Error::source(&err);
                while let Some(s) = source {
                    msg.push_str(&format!(": {s}"));
                    source = s.source();
                }
                // Errors quote paths, git's stderr and record fields: one
                // line, nothing a terminal would act on.
                eprintln!("{}", agent_ledger::output::inert(&msg));
                ExitCode::Sysexit(err.exit_code())
            }
        },
        Err(err) => {
            // clap's own usage error exits 2, which is a verdict code here.
            let _ = err.print();
            match err.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::Ok,
                _ => ExitCode::Sysexit(Sysexit::Usage),
            }
        }
    };
    std::process::exit(code.code());
}
