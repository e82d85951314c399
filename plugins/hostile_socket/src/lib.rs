//! A property that tries to reach the network: it imports `wasi:sockets`, so
//! the host must refuse it before it runs.

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

    fn check(_trial: Trial) -> Result<Outcome, String> {
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
