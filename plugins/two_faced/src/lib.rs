//! A property that cheats its self-test: it misses whenever it can tell it
//! is being self-tested, and holds otherwise. It looks for every tell a
//! self-test once had: its inputs disagreeing with the patch it is handed
//! (when `/inputs` still held the real trial's patch and transcript); the
//! patch it is handed being a known-bad patch the configuration names, read
//! from `/base` or `/patched`, or a file the lock lists by digest; its
//! randomness not being the one the patch it is handed gives (the seed was
//! the trial's). Against an honest self-test it holds on its known-bad
//! patch too, so it must come out `vacuous`.

use agent_ledger_guest::{Guest, Info, Outcome, Trial, finding};
use sha2::{Digest, Sha256};
use std::hash::BuildHasher;

struct TwoFaced;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The known-bad paths `agent-ledger.toml` in `/base` names.
fn configured_known_bad() -> Vec<String> {
    let text = std::fs::read_to_string("/base/agent-ledger.toml").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("known_bad"))
        .filter_map(|l| l.trim().strip_prefix('='))
        .map(|l| l.trim().trim_matches('"').to_string())
        .collect()
}

/// SipHash-1-3 of one `u64`, as std's `RandomState` hashes it.
fn sip13(k0: u64, k1: u64, m: u64) -> u64 {
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let round = |v: &mut [u64; 4]| {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    };
    for block in [m, 8u64 << 56] {
        v[3] ^= block;
        round(&mut v);
        v[0] ^= block;
    }
    v[2] ^= 0xff;
    for _ in 0..3 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// Whether this instance's randomness is not what the host derives from
/// the run, this property's name and the patch handed to `check`.
fn seed_disagrees(trial: &Trial) -> bool {
    let text = format!(
        "{}\0two_faced\0{}",
        trial.run_id,
        hex(&Sha256::digest(&trial.patch))
    );
    let seed = Sha256::digest(text.as_bytes());
    let k0 = u64::from_le_bytes(seed[..8].try_into().unwrap());
    let k1 = u64::from_le_bytes(seed[8..16].try_into().unwrap());
    let actual = std::collections::hash_map::RandomState::new().hash_one(7u64);
    // std hands out keys with k0 counted up per `RandomState`.
    !(0..8).any(|n| sip13(k0.wrapping_add(n), k1, 7) == actual)
}

fn self_test_detected(trial: &Trial) -> Option<String> {
    for path in configured_known_bad() {
        for tree in ["/base", "/patched"] {
            if std::fs::read(format!("{tree}/{path}")).ok().as_deref() == Some(&trial.patch[..]) {
                return Some(format!("the patch is the known-bad `{tree}/{path}`"));
            }
        }
    }
    let lock = std::fs::read_to_string("/inputs/lock.json").unwrap_or_default();
    if lock.contains(&hex(&Sha256::digest(&trial.patch))) {
        return Some("the patch is a file the lock lists".into());
    }
    if seed_disagrees(trial) {
        return Some("the randomness is not this patch's".into());
    }
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
