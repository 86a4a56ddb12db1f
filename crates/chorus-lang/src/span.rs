//! Source positions.

use std::fmt;
use std::sync::Arc;

/// Where a form came from: a file (or a pseudo-file such as `<string>`), and the 1-based line and
/// column of its first and last character.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// The file name as the user gave it (`<string>` for text with no file).
    pub file: Arc<str>,
    /// 1-based line of the first character.
    pub line: u32,
    /// 1-based column (in characters) of the first character.
    pub column: u32,
    /// 1-based line of the last character.
    pub end_line: u32,
    /// 1-based column just past the last character.
    pub end_column: u32,
}

impl Span {
    /// A span covering one point.
    pub fn point(file: Arc<str>, line: u32, column: u32) -> Span {
        Span {
            file,
            line,
            column,
            end_line: line,
            end_column: column,
        }
    }

    /// A span for forms made by a program rather than read from text (macro output without a
    /// better origin). It prints as `<generated>:0:0`.
    pub fn generated() -> Span {
        Span::point(Arc::from("<generated>"), 0, 0)
    }

    /// The smallest span covering `self` and `other` (same file assumed).
    pub fn to(&self, other: &Span) -> Span {
        Span {
            file: self.file.clone(),
            line: self.line,
            column: self.column,
            end_line: other.end_line,
            end_column: other.end_column,
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}
