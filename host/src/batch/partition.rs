//! `--partition`: which trials of a manifest one shard runs.

/// Which trials of the manifest this process runs (`--partition`), as
/// cargo-nextest shards: `hash:K/N` by a stable hash of the run id,
/// `count:K/N` by the trial's position; K counts from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition {
    Hash { k: u64, n: u64 },
    Count { k: u64, n: u64 },
}

impl std::str::FromStr for Partition {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Partition, String> {
        let bad = || format!("`{s}` is not `hash:K/N` or `count:K/N` with 1 <= K <= N");
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        let (k, n) = rest.split_once('/').ok_or_else(bad)?;
        let (k, n): (u64, u64) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        match kind {
            "hash" => Ok(Partition::Hash { k, n }),
            "count" => Ok(Partition::Count { k, n }),
            _ => Err(bad()),
        }
    }
}

impl Partition {
    /// Whether the trial at `index` (its position among the manifest's
    /// trials) with run id `run` is in this shard.
    pub fn selects(self, index: usize, run: &str) -> bool {
        match self {
            Partition::Hash { k, n } => {
                let digest = crate::digest::sha256_hex(run.as_bytes());
                let h = u64::from_str_radix(&digest[..16], 16).unwrap_or(0);
                h % n == k - 1
            }
            Partition::Count { k, n } => index as u64 % n == k - 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Partition;

    #[test]
    fn partitions_cover_every_trial_once() {
        let runs: Vec<String> = (0..200).map(|i| format!("run-{i:03}")).collect();
        for kind in ["hash", "count"] {
            let mut hits = vec![0; runs.len()];
            for k in 1..=3 {
                let p: Partition = format!("{kind}:{k}/3").parse().unwrap();
                for (i, r) in runs.iter().enumerate() {
                    if p.selects(i, r) {
                        hits[i] += 1;
                    }
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "{kind}");
        }
        for bad in ["hash:0/3", "hash:4/3", "count:1/0", "mod:1/2", "hash:1"] {
            assert!(bad.parse::<Partition>().is_err(), "{bad}");
        }
    }
}
