//! `agent-ledger sign` and `agent-ledger keygen`: signed verdicts.

use crate::exit::{Error, ExitCode, Result};
use crate::ledger::{self, RunId};
use crate::output::{self, OutputArgs, OutputFormat, inert};
use crate::record::{TranscriptReceipt, VerdictRecord};
use crate::resolve::ScopeArgs;
use crate::verify::Verifier;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// The run whose verdict to sign.
    #[arg(long, value_name = "ID")]
    pub run: String,
    /// The secret key file (from `agent-ledger keygen`).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl SignArgs {
    pub fn execute(self, ledger: Option<&Path>) -> Result<ExitCode> {
        let ledger = &self.scope.ledger(ledger)?;
        let run = RunId::parse(&self.run)?;
        let key = crate::sign::load_signing(&self.key)?;
        // Only a run that verifies is signed.
        let report = Verifier::new(ledger.clone(), Vec::new(), None).verify(run.as_str());
        if !report.ok {
            return Err(Error::Refused(format!(
                "run `{run}` does not verify, so its verdict is not signed: {}",
                report.failures.join("; ")
            )));
        }
        let verdict = ledger::read_required::<VerdictRecord>(&ledger.verdict(&run))?;
        let transcript = ledger::read_required::<TranscriptReceipt>(&ledger.transcript(&run))?;
        let statement = crate::sign::statement(
            run.as_str(),
            &transcript.record.body.sha256,
            &verdict.record,
            &verdict.sha256,
        );
        let envelope = crate::sign::sign(&statement, &key);
        let mut bytes = serde_json::to_vec_pretty(&envelope).expect("envelopes serialise");
        bytes.push(b'\n');
        let path = ledger.signature(&run);
        ledger::write_new(&path, &bytes)?;
        match self.output.format {
            OutputFormat::Json => output::print_json(&SignOutput {
                signature: &path,
                keyid: &envelope.signatures[0].keyid,
                statement: &statement,
            })?,
            OutputFormat::Human => output::print(&format!(
                "signed: {} verdict of run {run} with key {} -> {}\n",
                verdict.record.verdict.as_str(),
                &envelope.signatures[0].keyid[..16],
                inert(&path.display().to_string())
            ))?,
        }
        Ok(ExitCode::Ok)
    }
}

#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Where to write the secret key (created 0600, never overwritten).
    #[arg(long, value_name = "FILE")]
    pub secret: PathBuf,
    /// Where to write the public key (what auditors pass to `--trusted-key`).
    #[arg(long, value_name = "FILE")]
    pub public: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl KeygenArgs {
    pub fn execute(self) -> Result<ExitCode> {
        let id = crate::sign::keygen(&self.secret, &self.public)?;
        match self.output.format {
            OutputFormat::Json => output::print_json(&KeygenOutput {
                keyid: &id,
                secret: &self.secret,
                public: &self.public,
            })?,
            OutputFormat::Human => output::print(&format!(
                "key {id}\n  secret: {}\n  public: {}\n",
                inert(&self.secret.display().to_string()),
                inert(&self.public.display().to_string())
            ))?,
        }
        Ok(ExitCode::Ok)
    }
}

/// `sign --format json`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct SignOutput<'a> {
    /// The signature envelope written (`signatures/ID.json`).
    pub signature: &'a std::path::Path,
    /// The signing key's id.
    pub keyid: &'a str,
    /// The in-toto statement signed (see `signature-envelope`).
    pub statement: &'a serde_json::Value,
}

/// `keygen --format json`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct KeygenOutput<'a> {
    /// The key's id (sha256 of its public key).
    pub keyid: &'a str,
    /// The secret key file (0600).
    pub secret: &'a std::path::Path,
    /// The public key file.
    pub public: &'a std::path::Path,
}
