//! A property that imports `wasi:sockets` (Rust's std does, through
//! `TcpStream`): the host links those imports to functions that trap, so
//! it loads. With `mode = "connect"` (the default) it dials out, which must
//! end as `error` naming the socket function it called; with
//! `mode = "idle"` it never touches the network and holds.

use agent_ledger_guest::{Guest, Info, Outcome, Trial};

struct HostileSocket;

impl Guest for HostileSocket {
    fn describe() -> Info {
        Info {
            name: "hostile_socket".into(),
            version: "0".into(),
            summary: "dials out".into(),
        }
    }

    fn check(trial: Trial) -> Result<Outcome, String> {
        if agent_ledger_guest::config(&trial, "mode") == Some("idle") {
            return Ok(Outcome::Holds(Vec::new()));
        }
        match std::net::TcpStream::connect("127.0.0.1:9") {
            Ok(_) => {
                println!("ESCAPED: connected");
                Ok(Outcome::Holds(Vec::new()))
            }
            Err(e) => Err(format!("connect failed: {e}")),
        }
    }
}

agent_ledger_guest::export!(HostileSocket with_types_in agent_ledger_guest);
