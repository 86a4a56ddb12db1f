//! The front end's error type.

use crate::span::Span;
use std::fmt;

/// An error found in kernel source: what was wrong, and where. Displayed as
/// `FILE:LINE:COL: message`, the form editors and the `chorus` command understand.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    /// Where the offending form starts.
    pub span: Span,
    /// What was expected and, where one exists, the change that would fix it.
    pub message: String,
}

impl Error {
    /// An error at `span`.
    pub fn new(span: &Span, message: impl Into<String>) -> Error {
        Error {
            span: span.clone(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.span, self.message)
    }
}

impl std::error::Error for Error {}

/// The front end's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
