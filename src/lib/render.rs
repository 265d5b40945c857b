//! Shared pieces of what the tools show on a terminal: progress bars and rates.

use crate::Result;
use crate::cli::Io;

/// A progress bar with `template`, on a terminal only.
pub fn progress_bar(io: &Io, template: &str) -> Option<indicatif::ProgressBar> {
    (io.stderr_tty && !io.quiet).then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

/// Runs a download with a progress bar on a terminal.
pub fn with_download_progress<T>(
    io: &Io,
    f: impl FnOnce(crate::embed::install::Progress) -> Result<T>,
) -> Result<T> {
    let bar = progress_bar(
        io,
        "mem-embed {msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
    );
    let r = f(&mut |file, done, total| {
        if let Some(b) = &bar {
            b.set_message(file.to_string());
            b.set_length(total.unwrap_or(done));
            b.set_position(done);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    r
}

/// `embedded N texts (T tokens) in M ms: R tokens/s`.
pub fn throughput(texts: usize, tokens: usize, took: std::time::Duration) -> String {
    let s = took.as_secs_f64().max(1e-9);
    format!(
        "embedded {texts} texts ({tokens} tokens) in {:.0} ms: {:.0} tokens/s",
        s * 1000.0,
        tokens as f64 / s
    )
}
