//! Output formats shared by every subcommand that prints results.

use clap::ValueEnum;

/// `--format`: a human-readable table (default) or one JSON document on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Table,
    Json,
}

/// Write `text` to stdout. A closed pipe (`calibra ... | head`) is not an error: the reader has
/// what it wanted.
pub fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
