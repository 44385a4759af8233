//! Standard output that a closed pipe does not stop: with `fairsched … |
//! head`, `head` reads what it wants and the run goes on to write its
//! result files. Other write errors are reported.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write found the reader gone: nothing more is printed.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes to standard output; a closed pipe is not an error.
pub fn out(args: fmt::Arguments) -> anyhow::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut stdout = io::stdout().lock();
    match stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
    }
}

/// `print!` through [`out`]; returns from the function on a real error.
macro_rules! say {
    ($($t:tt)*) => { $crate::term::out(format_args!($($t)*))? };
}

/// `println!` through [`out`]; returns from the function on a real error.
macro_rules! sayln {
    () => { $crate::term::out(format_args!("\n"))? };
    ($($t:tt)*) => { $crate::term::out(format_args!("{}\n", format_args!($($t)*)))? };
}

pub(crate) use {say, sayln};

/// An error and its causes on one line, leaving out a cause whose text the
/// message already holds (a file error that names its OS error).
pub fn one_line(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_already_said_are_left_out() {
        let io = io::Error::new(io::ErrorKind::NotFound, "No such file or directory (os error 2)");
        let e = anyhow::Error::new(io).context("x.swf: No such file or directory (os error 2)");
        assert_eq!(one_line(&e), "x.swf: No such file or directory (os error 2)");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(one_line(&e), "outer: inner");
    }
}
