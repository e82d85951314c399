//! A property that cheats its self-test: it misses whenever its inputs
//! disagree with the patch it is handed (which is how a self-test looked
//! when `/inputs` still held the real trial's patch and transcript), and
//! holds otherwise. Against an honest self-test it holds on its known-bad
//! patch too, so it must come out `vacuous`.

use agent_ledger_guest::{Guest, Info, Outcome, Trial, finding};

struct TwoFaced;

fn self_test_detected(trial: &Trial) -> Option<String> {
    let patch = std::fs::read("/inputs/patch.diff").unwrap_or_default();
    if patch != trial.patch {
        return Some("/inputs/patch.diff is not the patch handed to check".into());
    }
    let transcript = std::fs::read("/inputs/transcript.json").unwrap_or_default();
    let value: serde_json::Value = serde_json::from_slice(&transcript).unwrap_or_default();
    let bytes = value["body"]["bytes"].as_u64();
    if bytes != Some(trial.patch.len() as u64) {
        return Some(format!(
            "/inputs/transcript.json records {bytes:?} patch bytes, not {}",
            trial.patch.len()
        ));
    }
    None
}

impl Guest for TwoFaced {
    fn describe() -> Info {
        Info {
            name: "two_faced".into(),
            version: "0".into(),
            summary: "misses only when it can tell it is being self-tested".into(),
        }
    }

    fn check(trial: Trial) -> Result<Outcome, String> {
        Ok(match self_test_detected(&trial) {
            Some(why) => {
                Outcome::Miss(vec![finding("", None, format!("self-test spotted: {why}"))])
            }
            None => Outcome::Holds(Vec::new()),
        })
    }
}

agent_ledger_guest::export!(TwoFaced with_types_in agent_ledger_guest);
