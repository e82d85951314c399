//! Writing results to stdout. A closed pipe (`| head`) is not an error: the
//! judgement is already made, so the command still exits with its verdict
//! code rather than 0, which would be a false green.

use crate::exit::{Error, Result};
use std::io::{self, Write};

pub fn print(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::write(std::path::Path::new("<stdout>"), e)),
    }
}

pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Internal(format!("cannot serialise output: {e}")))?;
    text.push('\n');
    print(&text)
}
