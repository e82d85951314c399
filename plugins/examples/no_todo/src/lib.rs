wit_bindgen::generate!({ world: "plugin", path: "wit", generate_all }); // a copy of agent-ledger's wit/

use agent_ledger::property::types::{Finding, Info, Outcome, Trial};
use exports::agent_ledger::property::property::Guest;

struct NoTodo;

impl Guest for NoTodo {
    fn describe() -> Info {
        Info {
            name: "no_todo".into(),
            version: "0.1.0".into(),
            summary: "no TODO in src/main.rs".into(),
        }
    }
    fn check(_trial: Trial) -> Result<Outcome, String> {
        let src = std::fs::read_to_string("/patched/src/main.rs").map_err(|e| e.to_string())?;
        Ok(match src.lines().position(|l| l.contains("TODO")) {
            None => Outcome::Holds(vec![]),
            Some(i) => Outcome::Miss(vec![Finding {
                path: "src/main.rs".into(),
                line: Some(i as u32 + 1),
                message: "TODO left in".into(),
                frozen: false,
            }]),
        })
    }
}

export!(NoTodo);
