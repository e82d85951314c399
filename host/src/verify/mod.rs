//! Offline verification of archived runs: every record re-read, re-hashed
//! and re-linked, every verdict recomputed from its records, every plugin
//! present by digest, signatures checked against trusted keys, and (with a
//! repository) the replay re-run for a byte-identical property record.
//! Nothing here touches the network or writes to the ledger.

use crate::capture::{check_receipt, read_stored};
use crate::classify::{Records, verdict_of};
use crate::exit::{Error, Result};
use crate::git::Repo;
use crate::ledger::{self, Ledger, Loaded, RunId, check_link, check_run};
use crate::ledger::{Fetched, read_object};
use crate::lock::check_consistent;
use crate::record::{FixtureLock, PropertyRecord, TranscriptReceipt, VerdictRecord};
use crate::replay::TrialTrees;
use crate::wasm::Sandbox;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

mod rerun;
use rerun::Archived;

/// What verifying one run found.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct RunVerification {
    pub run_id: String,
    pub ok: bool,
    pub failures: Vec<String>,
    /// What became of the run's signature; an invalid one is a failure.
    pub signature: SignatureCheck,
    /// Which evidence this verification computed again and which it took
    /// from the records as written.
    pub evidence: Evidence,
}

/// What `verify` recomputed and what it read from the records: the latter
/// is bound to the run by the records' digests only, so a record replaced
/// and relinked as a whole is caught by nothing but a signature under a
/// trusted key.
/// What `verify` found of a run's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignatureCheck {
    /// Valid under a trusted key.
    Valid,
    /// The run has none.
    Absent,
    /// It has one, and no trusted key was given to check it.
    Unchecked,
}

impl SignatureCheck {
    pub fn as_str(self) -> &'static str {
        match self {
            SignatureCheck::Valid => "valid",
            SignatureCheck::Absent => "absent",
            SignatureCheck::Unchecked => "unchecked",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Evidence {
    pub recomputed: Vec<String>,
    pub from_records: Vec<String>,
}

pub struct Verifier<'a> {
    pub ledger: Ledger,
    pub trusted: Vec<ed25519_dalek::VerifyingKey>,
    /// Every run must carry a signature valid under a trusted key.
    pub require_signatures: bool,
    pub replay: Option<(&'a Repo, &'a Sandbox)>,
    /// Re-run each trial's test command (`--rerun-tests`, with `replay`):
    /// the environment and limits it runs under; the command, the log
    /// parser and whether a baseline ran come from the record.
    pub rerun: Option<crate::replay::TestCommand>,
    /// Objects already hashed in this run of `verify`.
    objects: HashMap<String, std::result::Result<(), String>>,
}

/// Every run id with any record in the ledger, sorted.
pub fn runs_in(ledger: &Ledger) -> Vec<String> {
    let mut runs = BTreeSet::new();
    for (dir, suffix) in [
        ("transcripts", ".json"),
        ("fixtures", ".lock.json"),
        ("properties", ".json"),
        ("verdicts", ".json"),
    ] {
        let Ok(entries) = std::fs::read_dir(ledger.root().join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(run) = name.strip_suffix(suffix)
                && !name.starts_with('.')
            {
                runs.insert(run.to_string());
            }
        }
    }
    runs.into_iter().collect()
}

impl<'a> Verifier<'a> {
    pub fn new(
        ledger: Ledger,
        trusted: Vec<ed25519_dalek::VerifyingKey>,
        replay: Option<(&'a Repo, &'a Sandbox)>,
    ) -> Self {
        Verifier {
            ledger,
            trusted,
            require_signatures: false,
            replay,
            rerun: None,
            objects: HashMap::new(),
        }
    }

    fn object(&mut self, sha: &str) -> std::result::Result<(), String> {
        let objects = self.ledger.objects();
        self.objects
            .entry(sha.to_string())
            .or_insert_with(|| match read_object(&objects, sha) {
                Ok(Fetched::Found(_)) => Ok(()),
                Ok(Fetched::Unavailable(why)) => Err(why),
                Err(e) => Err(e.to_string()),
            })
            .clone()
    }

    pub fn verify(&mut self, run: &str) -> RunVerification {
        let mut failures = Vec::new();
        let mut signature = SignatureCheck::Absent;
        let mut evidence = Evidence::default();
        match RunId::parse(run) {
            Ok(id) => self.verify_run(&id, &mut failures, &mut signature, &mut evidence),
            Err(e) => failures.push(e.to_string()),
        }
        RunVerification {
            run_id: run.to_string(),
            ok: failures.is_empty(),
            failures,
            signature,
            evidence,
        }
    }

    fn verify_run(
        &mut self,
        run: &RunId,
        failures: &mut Vec<String>,
        signature: &mut SignatureCheck,
        evidence: &mut Evidence,
    ) {
        let l = self.ledger.clone();
        macro_rules! check {
            ($what:expr, $e:expr) => {
                if let Err(e) = $e {
                    failures.push(format!("{}: {e}", $what));
                }
            };
        }
        fn load<T: crate::record::Record>(
            path: &Path,
            what: &str,
            failures: &mut Vec<String>,
        ) -> Option<Loaded<T>> {
            match ledger::read_optional::<T>(path) {
                Ok(Some(r)) => Some(r),
                Ok(None) => {
                    failures.push(format!("{what}: missing (`{}`)", path.display()));
                    None
                }
                Err(e) => {
                    failures.push(format!("{what}: {e}"));
                    None
                }
            }
        }
        let transcript =
            load::<TranscriptReceipt>(&l.transcript(run), "transcript receipt", failures);
        let mut patch = None;
        if let Some(t) = &transcript {
            check!("transcript receipt", check_run(t, run));
            match check_receipt(&t.path, &t.record) {
                Ok(p) => patch = Some(p),
                Err(e) => failures.push(format!("transcript receipt: {e}")),
            }
        }
        // A lock and a property record are absent by design after an
        // incomplete transcript; otherwise they must be there.
        let complete = transcript.as_ref().is_some_and(|t| t.record.complete);
        let lock_path = l.lock(run);
        let lock = if complete || lock_path.exists() {
            load::<FixtureLock>(&lock_path, "fixture lock", failures)
        } else {
            None
        };
        if let Some(k) = &lock {
            check!("fixture lock", check_run(k, run));
            check!("fixture lock", check_consistent(&k.record, &k.path));
            if let Some(t) = &transcript {
                check!(
                    "fixture lock",
                    check_link(
                        &k.path,
                        "transcript_sha256",
                        &k.record.transcript_sha256,
                        &t.sha256,
                        &t.path
                    )
                );
            }
        }
        let props_path = l.properties(run);
        let properties = if props_path.exists() {
            load::<PropertyRecord>(&props_path, "property record", failures)
        } else {
            None
        };
        if let Some(p) = &properties {
            check!("property record", check_run(p, run));
            if let Some(t) = &transcript {
                check!(
                    "property record",
                    check_link(
                        &p.path,
                        "transcript_sha256",
                        &p.record.transcript_sha256,
                        &t.sha256,
                        &t.path
                    )
                );
            }
            match &lock {
                Some(k) => check!(
                    "property record",
                    check_link(
                        &p.path,
                        "lock_sha256",
                        &p.record.lock_sha256,
                        &k.sha256,
                        &k.path
                    )
                ),
                None => failures
                    .push("property record: it builds on a fixture lock that is missing".into()),
            }
            if let Some(j) = &p.record.junit {
                check!("test report", read_stored(&p.path, j).map(|_| ()));
            }
            if let Some(j) = &p.record.base_junit {
                check!("base test report", read_stored(&p.path, j).map(|_| ()));
            }
            if let Some(l) = p.record.test_run.as_ref().and_then(|t| t.log.as_ref()) {
                check!("test command's output", read_stored(&p.path, l).map(|_| ()));
            }
            if let Some(j) = p.record.evaluation.as_ref().and_then(|e| e.patch.as_ref()) {
                check!(
                    "evaluator's test patch",
                    read_stored(&p.path, j).map(|_| ())
                );
            }
            let mut wanted: Vec<(String, String)> =
                vec![("configuration".into(), p.record.config_sha256.clone())];
            for r in &p.record.properties {
                if !r.plugin_sha256.is_empty() {
                    wanted.push((format!("plugin of `{}`", r.name), r.plugin_sha256.clone()));
                }
                if let Some(kb) = r.inputs.get("known_bad") {
                    wanted.push((format!("known-bad patch of `{}`", r.name), kb.clone()));
                }
            }
            for (what, sha) in wanted {
                check!(what, self.object(&sha));
            }
        }
        let verdict = load::<VerdictRecord>(&l.verdict(run), "verdict", failures);
        if let Some(v) = &verdict {
            check!("verdict", check_run(v, run));
            if failures.is_empty() {
                let records = Records {
                    transcript: transcript.clone(),
                    lock: lock.clone(),
                    properties: properties.clone(),
                };
                let mut recomputed = verdict_of(run, &records);
                // Verdicts written before the token ledger have none.
                if v.record.tokens.is_none() {
                    recomputed.tokens = None;
                }
                if recomputed != v.record {
                    failures.push(format!(
                        "verdict: the record says `{}` from records {} but the records on file give `{}` from {}",
                        v.record.verdict.as_str(),
                        names(&v.record),
                        recomputed.verdict.as_str(),
                        names(&recomputed)
                    ));
                }
            }
        }
        self.check_signature(run, patch.as_deref(), verdict.as_ref(), failures, signature);
        let test_run = properties.as_ref().and_then(|p| p.record.test_run.as_ref());
        *evidence = self.evidence(
            test_run.is_some(),
            properties
                .as_ref()
                .is_some_and(|p| p.record.junit.is_some()),
            signature.as_str() == "valid",
        );
        if let (Some((repo, sandbox)), Some(t), Some(k), Some(p), Some(patch)) =
            (self.replay, &transcript, &lock, &properties, &patch)
            && failures.is_empty()
        {
            check!(
                "replay",
                self.replay_matches(repo, sandbox, run, t, k, p, patch)
            );
            if let Some(test) = &self.rerun
                && failures.is_empty()
            {
                check!(
                    "re-running the test command",
                    self.rerun_matches(repo, sandbox, run, t, k, p, patch, test)
                );
            }
        }
    }

    /// What verifying a run recomputes, and what it takes from records.
    fn evidence(&self, test_run: bool, junit: bool, signed: bool) -> Evidence {
        let mut e = Evidence::default();
        e.recomputed
            .push("every record's digest and link, and its run id".into());
        e.recomputed
            .push("the patch, re-judged from the stored response or body".into());
        e.recomputed
            .push("the verdict, from the records on file".into());
        if self.replay.is_some() {
            e.recomputed.push(
                "the property record: every plugin re-run on the archived patch, lock and configuration"
                    .into(),
            );
        }
        let rerun = self.replay.is_some() && self.rerun.is_some() && test_run;
        if rerun {
            e.recomputed.push(
                "the test command's runs (patched, and base when recorded), in the sandbox: the same test outcomes required"
                    .into(),
            );
        }
        e.from_records
            .push("the model's response as captured (the model is never called again)".into());
        if test_run && !rerun {
            e.from_records.push(
                "the test command's run and its reports (`test_run`, `junit`, `base_junit`): `tests_pass` is re-judged on the stored reports, the command is not re-run (`--replay --rerun-tests` re-runs it)"
                    .into(),
            );
        } else if junit && !test_run {
            e.from_records
                .push("the JUnit report given to `check --junit`".into());
        }
        if !signed {
            e.from_records.push(
                "nothing binds these records to their run but their digests: a run replaced and relinked whole is caught only by a signature under a trusted key"
                    .into(),
            );
        }
        e
    }

    fn check_signature(
        &self,
        run: &RunId,
        patch: Option<&[u8]>,
        verdict: Option<&Loaded<VerdictRecord>>,
        failures: &mut Vec<String>,
        state: &mut SignatureCheck,
    ) {
        let path = self.ledger.signature(run);
        let bytes = match crate::input::read_file(&path, crate::input::RECORD_CAP) {
            Ok(b) => b,
            Err(_) => {
                if self.require_signatures {
                    failures.push(format!(
                        "signature: missing (`{}`), and --require-signatures asks for one",
                        path.display()
                    ));
                }
                return;
            }
        };
        if self.trusted.is_empty() {
            // Never trusted on its own say-so: without a key it proves nothing.
            if self.require_signatures {
                failures
                    .push("signature: present, but no --trusted-key to check it against".into());
            }
            *state = SignatureCheck::Unchecked;
            return;
        }
        let statement = match crate::sign::open(&bytes, &self.trusted) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("signature: {e}"));
                return;
            }
        };
        let (Some(patch), Some(v)) = (patch, verdict) else {
            failures.push("signature: the records it signs are not all readable".into());
            return;
        };
        let expected = crate::sign::statement(
            run.as_str(),
            &crate::digest::sha256_hex(patch),
            &v.record,
            &v.sha256,
        );
        if statement != expected {
            failures.push("signature: the signed statement does not match the records on file (subject, verdict or record digests differ)".into());
            return;
        }
        *state = SignatureCheck::Valid;
    }

    #[allow(clippy::too_many_arguments)]
    fn replay_matches(
        &self,
        repo: &Repo,
        sandbox: &Sandbox,
        run: &RunId,
        transcript: &Loaded<TranscriptReceipt>,
        lock: &Loaded<FixtureLock>,
        props: &Loaded<PropertyRecord>,
        patch: &[u8],
    ) -> Result<()> {
        let record = &props.record;
        let stored = |j: &Option<crate::record::StoredFile>| -> Result<_> {
            Ok(match j {
                Some(j) => Some((j.clone(), read_stored(&props.path, j)?)),
                None => None,
            })
        };
        let trees = TrialTrees::new(repo, &record.base_revision)?;
        let again = self.archived_replay(
            Archived {
                repo,
                sandbox,
                run,
                transcript,
                lock,
                props,
                patch,
                trees: &trees,
            },
            (
                stored(&record.junit)?,
                record.test_run.clone(),
                stored(&record.base_junit)?,
            ),
            None,
        )?;
        let stored = crate::input::read_file(&props.path, crate::input::RECORD_CAP)?;
        if ledger::to_bytes(&again.record) != stored {
            return Err(Error::data(
                &props.path,
                "re-running the replay gives a different property record",
            ));
        }
        Ok(())
    }
}

fn names(v: &VerdictRecord) -> String {
    let short = |d: &Option<String>| {
        d.as_deref()
            .map(|s| s[..12.min(s.len())].to_string())
            .unwrap_or_else(|| "none".into())
    };
    format!(
        "(transcript {}, lock {}, properties {})",
        short(&v.transcript_sha256),
        short(&v.lock_sha256),
        short(&v.properties_sha256)
    )
}
