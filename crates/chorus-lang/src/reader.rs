//! The reader: kernel text to [`Form`]s with spans.
//!
//! It follows the Common Lisp reader where the kernel language overlaps with it, and adds C's
//! literal suffixes:
//!
//! * Symbols are folded to lower case (`VecAdd` reads as `vecadd`); characters inside `|…|` or
//!   after a backslash keep their case and lose any special meaning (`|Mixed Case|`, `a\(b`).
//!   A package prefix is dropped: `pkg:name` and `pkg::name` read as `name` (see
//!   [Package prefixes](#package-prefixes)); keywords keep their colon (`:restrict`).
//! * Numbers as Common Lisp reads them: `1` and `1.` are integers; `1.0`, `.5`, `1e-3`, `1.0f0`,
//!   `1.0s0` are single floats; `1.0d0`, `1d-3`, `1.0l0` are doubles; `#x10`, `#b101`, `#o17` are
//!   integers in another radix. C spellings are accepted as well: `0x10`, `1.5f` (single), and the
//!   integer suffixes `u`, `l`/`ll` and `ul`/`ull` (see [`IntSuffix`]). Ratios (`1/2`) have no
//!   kernel type and are an error. A token that starts like a number but is not one (`1+`, `1-`)
//!   is a symbol, as in Common Lisp.
//! * Strings take the escapes `\"`, `\\`, `\n`, `\t`, `\r`, `\0` and `\xHH`.
//! * `;` starts a line comment; `#| … |#` is a block comment, and nests.
//! * `'x`, `` `x ``, `,x`, `,@x` and `#'f` read as `(quote x)`, `(quasiquote x)`, `(unquote x)`,
//!   `(unquote-splicing x)` and `(function f)`. A stray `,` is read like any other; the macro
//!   expander reports it.
//!
//! * `#+feature form` and `#-feature form` read `form` only when the feature expression holds
//!   (resp. does not); see [`FEATURES`]. A form they skip is read as Common Lisp's
//!   `*read-suppress*` reads it: anything goes inside it.
//! * `#16r1f` reads an integer in any radix from 2 to 36.
//!
//! Not supported in kernel code, each with its own error: dotted pairs, `[ ]`, and the `#`
//! syntax of Common Lisp data the kernel language has no type for. In particular `#:name` (an
//! uninterned symbol in Common Lisp) is rejected, and so is any symbol whose name starts with
//! `#:`, even when escaped: such names are reserved for the symbols the macro expander's
//! `gensym` makes, so that those can never collide with a name in the source.
//!
//! # Host forms
//!
//! [`read_source`] reads a whole Common Lisp file (a CL-Cuda or Chorus source with its host
//! code around the kernels). Outside the kernel definitions ([`KERNEL_DEFINITIONS`]: a list
//! whose head is one of them, at top level or in a top-level `progn` or `eval-when`, is kernel
//! code; elsewhere, such as in a host macro's template, it is host data) it also reads the Common
//! Lisp syntax that host code uses: characters (`#\a`, `#\Space`), vectors (`#(1 2)`), ratios
//! (`1/2`), integers beyond 64 bits, `#.form` (read, never evaluated), `#:name`, `#p"path"`,
//! `#*101`, `#c(1 2)`, `#2A(…)`, `#1=`/`#1#`. These read as placeholders (a character as a
//! one-character string, `#(a b)` as `(vector a b)`, a ratio as `(/ n d)`, `#.form` as `form`)
//! and mark their top-level form ([`SourceForm::host_syntax`]); host forms are skipped by
//! [`crate::source`], so the placeholders are never compiled. Inside a kernel definition the
//! same syntax is an error at its span.
//!
//! # Package prefixes
//!
//! Common Lisp names carry packages (`cl-cuda:int`, `chorus:float4`,
//! `cl-cuda-examples.sph::foo`). The kernel language has one namespace, so the reader keeps the
//! local part of every package-qualified symbol: its own names (types, built-ins, statement
//! keywords, `defkernel`) are found whatever package prefix they carry, and user names keep
//! their local part. Two packages that define the same local name therefore define the same
//! kernel name, which is the duplicate-definition error of the checker, at the second
//! definition. A name with escaped colons (`|a:b|`) is not package-qualified.
//!
//! ```
//! use chorus_lang::read_str;
//!
//! let forms = read_str("(set (aref c i) 1.5f) ; a comment\n'VecAdd", "example.lisp")?;
//! assert_eq!(forms[0].to_string(), "(set (aref c i) 1.5)");
//! assert_eq!(forms[1].to_string(), "'vecadd");
//! assert_eq!((forms[1].span.line, forms[1].span.column), (2, 1));
//! # Ok::<(), chorus_lang::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::form::{FloatPrecision, Form, FormKind, IntSuffix};
use crate::span::Span;
use std::sync::Arc;

mod features;

/// How deeply lists and quotes may nest. Real kernels stay far below it; the limit keeps deeply
/// nested input from overflowing the stack here or in the recursive passes after the reader.
pub const MAX_NESTING: usize = 256;

/// The prefix of every symbol name that only `gensym` may create (see the module documentation).
pub const GENSYM_PREFIX: &str = "#:";

/// The largest text [`read_str`] and [`read_one`] accept, in bytes (64 MiB). Compiling takes
/// memory in proportion to the text (a few tens of bytes per byte of text), so a larger text is
/// refused with an error rather than risk exhausting memory; [`read_str_limited`] takes
/// another limit.
pub const MAX_SOURCE_BYTES: usize = 64 << 20;

/// Reads every form in `text`. `file` names the text in spans (`<string>` by convention when
/// there is no file). A text over [`MAX_SOURCE_BYTES`] is an error.
pub fn read_str(text: &str, file: &str) -> Result<Vec<Form>> {
    read_str_limited(text, file, MAX_SOURCE_BYTES)
}

/// [`read_str`] with `max_bytes` as the largest text accepted instead of [`MAX_SOURCE_BYTES`].
pub fn read_str_limited(text: &str, file: &str, max_bytes: usize) -> Result<Vec<Form>> {
    check_size(text, file, max_bytes)?;
    let mut reader = Reader::new(text, file);
    let mut forms = Vec::new();
    while let Some(form) = reader.read_top_level()? {
        forms.push(form);
    }
    Ok(forms)
}

/// An error unless `text` has at most `max_bytes` bytes.
fn check_size(text: &str, file: &str, max_bytes: usize) -> Result<()> {
    if text.len() <= max_bytes {
        return Ok(());
    }
    Err(Error::new(
        &Span::point(Arc::from(file), 1, 1),
        format!(
            "the text is {} bytes, more than the {max_bytes} bytes a compilation unit may have",
            text.len()
        ),
    ))
}

/// Reads exactly one form from `text`; an empty text, a second form or a text over
/// [`MAX_SOURCE_BYTES`] is an error.
pub fn read_one(text: &str, file: &str) -> Result<Form> {
    check_size(text, file, MAX_SOURCE_BYTES)?;
    let mut reader = Reader::new(text, file);
    let Some(form) = reader.read_top_level()? else {
        return Err(Error::new(
            &reader.here(),
            "expected a form, found the end of the text",
        ));
    };
    if let Some(extra) = reader.read_top_level()? {
        return Err(Error::new(
            &extra.span,
            "expected one form, found a second one here",
        ));
    }
    Ok(form)
}

/// The heads of the kernel definitions. In a whole source file ([`read_source`]) a list whose
/// head is one of these is kernel code, read without the host-only syntax.
pub const KERNEL_DEFINITIONS: [&str; 5] = [
    "defkernel",
    "defkernelmacro",
    "defkernel-symbol-macro",
    "defglobal",
    "defkernel-struct",
];

/// The features that `#+` and `#-` test, as keywords without their colon: Chorus is a CL-Cuda
/// that reads Common Lisp. No Lisp implementation (`:sbcl`, `:ccl`), operating system or
/// machine feature is present, since no host code runs: `#+sbcl form` skips `form` and
/// `#-sbcl form` reads it. A feature expression is a feature, `(:and …)`, `(:or …)` or
/// `(:not x)`.
pub const FEATURES: [&str; 3] = ["chorus", "cl-cuda", "common-lisp"];

/// One top-level form of a whole source file.
#[derive(Clone, Debug)]
pub struct SourceForm {
    /// The form (host-only syntax in it read as placeholders: see the module documentation).
    pub form: Form,
    /// Whether host-only syntax (a character, a vector, a ratio, `#.`, …) was read in it.
    pub host_syntax: bool,
}

/// Reads every top-level form of a whole Common Lisp source file: kernel definitions as
/// [`read_str`] reads them, and the host code around them with the Common Lisp syntax the
/// kernel language has no use for (see [Host forms](self#host-forms)). A text over
/// [`MAX_SOURCE_BYTES`] is an error.
pub fn read_source(text: &str, file: &str) -> Result<Vec<SourceForm>> {
    check_size(text, file, MAX_SOURCE_BYTES)?;
    let mut reader = Reader::new(text, file);
    reader.host = true;
    let mut forms = Vec::new();
    loop {
        let before = reader.host_syntax;
        let Some(form) = reader.read_top_level()? else {
            return Ok(forms);
        };
        forms.push(SourceForm {
            form,
            host_syntax: reader.host_syntax != before,
        });
    }
}

/// A cursor over the text that knows its line and column.
struct Reader {
    chars: Vec<char>,
    pos: usize,
    line: u32,
    column: u32,
    file: Arc<str>,
    /// Lists and prefixes (`'`, `` ` ``, `,`, `#'`) open around the cursor.
    depth: usize,
    /// Whether the host-only syntax is read here (in a whole file, outside kernel definitions).
    host: bool,
    /// How many `#+`/`#-` skipped forms are open around the cursor: inside one, anything reads.
    suppress: usize,
    /// How many host-only data were read so far.
    host_syntax: usize,
    /// Whether a list read here is a top-level form, or one inside a top-level `progn` or
    /// `eval-when`: where a kernel definition is kernel code (elsewhere, in a host function or
    /// a host macro's template, it is data of the host code).
    collectable: bool,
}

/// A position in the text: what a span is made of.
#[derive(Clone, Copy)]
struct Mark {
    line: u32,
    column: u32,
}

/// Characters that end a token (besides whitespace).
fn is_terminating(c: char) -> bool {
    matches!(c, '(' | ')' | '"' | ';' | '\'' | '`' | ',' | '[' | ']')
}

impl Reader {
    fn new(text: &str, file: &str) -> Reader {
        // A UTF-8 byte-order mark (some Windows editors write one) is no part of the text.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        Reader {
            chars: text.chars().collect(),
            pos: 0,
            line: 1,
            column: 1,
            file: Arc::from(file),
            depth: 0,
            host: false,
            suppress: 0,
            host_syntax: 0,
            collectable: true,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn mark(&self) -> Mark {
        Mark {
            line: self.line,
            column: self.column,
        }
    }

    /// The span of one character at the cursor (or the end of the text).
    fn here(&self) -> Span {
        let m = self.mark();
        self.span_of(
            m,
            Mark {
                line: m.line,
                column: m.column + 1,
            },
        )
    }

    fn span_of(&self, start: Mark, end: Mark) -> Span {
        Span {
            file: self.file.clone(),
            line: start.line,
            column: start.column,
            end_line: end.line,
            end_column: end.column,
        }
    }

    /// The span from `start` to the cursor.
    fn span_from(&self, start: Mark) -> Span {
        self.span_of(start, self.mark())
    }

    /// The span of the `len` characters starting at `start` (all on one line).
    fn span_len(&self, start: Mark, len: u32) -> Span {
        self.span_of(
            start,
            Mark {
                line: start.line,
                column: start.column + len,
            },
        )
    }

    /// Skips whitespace, `;` comments and nested `#| |#` comments.
    fn skip_trivia(&mut self) -> Result<()> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some(';') => {
                    while let Some(c) = self.bump() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                Some('#') if self.peek_at(1) == Some('|') => self.skip_block_comment()?,
                Some('#') if matches!(self.peek_at(1), Some('+' | '-')) => {
                    self.read_conditional()?;
                }
                _ => return Ok(()),
            }
        }
    }

    /// `#+feature form` / `#-feature form` at the cursor: reads the feature expression, then
    /// either leaves the cursor before `form` (it is read next, as if the prefix were not
    /// there) or reads `form` suppressed and drops it.
    fn read_conditional(&mut self) -> Result<()> {
        let start = self.mark();
        self.bump();
        let wanted = self.bump() == Some('+');
        let prefix_span = self.span_from(start);
        let sign = if wanted { '+' } else { '-' };
        self.skip_plain_trivia()?;
        if matches!(self.peek(), None | Some(')')) {
            return Err(Error::new(
                &prefix_span,
                format!("expected a feature expression after `#{sign}`"),
            ));
        }
        // Feature expressions are read in the keyword package, where anything is a name.
        let (saved_host, saved_suppress) = (self.host, self.suppress);
        self.host = true;
        self.suppress = 0;
        let expression = self.read_form();
        (self.host, self.suppress) = (saved_host, saved_suppress);
        let expression = expression?;
        let holds = features::holds(&expression)?;
        let span = prefix_span.to(&expression.span);
        self.skip_plain_trivia()?;
        if matches!(self.peek(), None | Some(')')) {
            return Err(Error::new(
                &span,
                format!("expected a form after `#{sign}{expression}`"),
            ));
        }
        if holds != wanted {
            self.suppress += 1;
            // A conditional in front of the skipped form applies first (`#+a #+b x` skips x
            // when a is missing, whatever b is).
            let skipped = self.skip_trivia().and_then(|()| {
                if matches!(self.peek(), None | Some(')')) {
                    Err(Error::new(
                        &span,
                        format!("expected a form after `#{sign}{expression}`"),
                    ))
                } else {
                    self.read_form()
                }
            });
            self.suppress -= 1;
            skipped?;
        }
        Ok(())
    }

    /// Skips whitespace and comments, not `#+`/`#-`.
    fn skip_plain_trivia(&mut self) -> Result<()> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some(';') => {
                    while let Some(c) = self.bump() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                Some('#') if self.peek_at(1) == Some('|') => self.skip_block_comment()?,
                _ => return Ok(()),
            }
        }
    }

    /// Whether host-only syntax reads here; counts it when it does.
    fn host_datum(&mut self) -> bool {
        if self.host || self.suppress > 0 {
            self.host_syntax += 1;
            true
        } else {
            false
        }
    }

    fn skip_block_comment(&mut self) -> Result<()> {
        // Every open `#|` is remembered so that an unterminated comment points at the one that
        // is still open.
        let mut open = vec![self.mark()];
        self.bump();
        self.bump();
        while let Some(&start) = open.last() {
            match (self.peek(), self.peek_at(1)) {
                (None, _) => {
                    return Err(Error::new(
                        &self.span_len(start, 2),
                        "unterminated block comment: no `|#` closes this `#|`",
                    ));
                }
                (Some('|'), Some('#')) => {
                    self.bump();
                    self.bump();
                    open.pop();
                }
                (Some('#'), Some('|')) => {
                    open.push(self.mark());
                    self.bump();
                    self.bump();
                }
                _ => {
                    self.bump();
                }
            }
        }
        Ok(())
    }

    /// The next top-level form, or `None` at the end of the text.
    fn read_top_level(&mut self) -> Result<Option<Form>> {
        self.skip_trivia()?;
        match self.peek() {
            None => Ok(None),
            Some(')') => Err(Error::new(&self.here(), "unbalanced `)`: no `(` is open")),
            Some(_) => self.read_form().map(Some),
        }
    }

    /// Reads one form; the cursor is on its first character (trivia already skipped).
    fn read_form(&mut self) -> Result<Form> {
        if self.depth >= MAX_NESTING {
            return Err(Error::new(
                &self.here(),
                format!("forms nest more than {MAX_NESTING} deep here"),
            ));
        }
        self.depth += 1;
        let form = self.read_form_at_depth();
        self.depth -= 1;
        form
    }

    fn read_form_at_depth(&mut self) -> Result<Form> {
        let start = self.mark();
        let Some(c) = self.peek() else {
            return Err(Error::new(
                &self.here(),
                "expected a form, found the end of the text",
            ));
        };
        match c {
            '(' => self.read_list(),
            ')' => Err(Error::new(&self.here(), "unbalanced `)`: no `(` is open")),
            '[' | ']' => Err(Error::new(
                &self.here(),
                format!("`{c}` is not part of the kernel language; index arrays with (aref a i)"),
            )),
            '"' => self.read_string(),
            '\'' => {
                self.bump();
                self.read_prefixed(start, "'", "quote")
            }
            '`' => {
                self.bump();
                self.read_prefixed(start, "`", "quasiquote")
            }
            ',' => {
                self.bump();
                if self.peek() == Some('@') {
                    self.bump();
                    self.read_prefixed(start, ",@", "unquote-splicing")
                } else {
                    self.read_prefixed(start, ",", "unquote")
                }
            }
            '#' => self.read_dispatch(),
            _ => self.read_token(),
        }
    }

    /// `'x` and friends: the head symbol gets the span of the prefix characters.
    fn read_prefixed(&mut self, start: Mark, prefix: &str, head: &str) -> Result<Form> {
        // Quoted data is never a top-level form.
        let saved_collectable = std::mem::replace(&mut self.collectable, false);
        let form = self.read_prefixed_here(start, prefix, head);
        self.collectable = saved_collectable;
        form
    }

    fn read_prefixed_here(&mut self, start: Mark, prefix: &str, head: &str) -> Result<Form> {
        let head_span = self.span_from(start);
        self.skip_trivia()?;
        match self.peek() {
            None | Some(')') => Err(Error::new(
                &head_span,
                format!("expected a form after {prefix} ({head})"),
            )),
            Some(_) => {
                let arg = self.read_form()?;
                let span = head_span.to(&arg.span);
                Ok(Form::list(vec![Form::symbol(head, head_span), arg], span))
            }
        }
    }

    fn read_list(&mut self) -> Result<Form> {
        let start = self.mark();
        self.bump();
        let (saved_host, saved_collectable) = (self.host, self.collectable);
        let at_top = self.collectable;
        self.collectable = false;
        let mut items = Vec::new();
        loop {
            self.skip_trivia()?;
            match self.peek() {
                None => {
                    return Err(Error::new(
                        &self.span_len(start, 1),
                        "unterminated list: no `)` closes this `(`",
                    ));
                }
                Some(')') => {
                    self.bump();
                    // Memory is proportional to the text: no spare capacity is kept.
                    items.shrink_to_fit();
                    (self.host, self.collectable) = (saved_host, saved_collectable);
                    return Ok(Form::list(items, self.span_from(start)));
                }
                Some(_) => {
                    items.push(self.read_form()?);
                    if items.len() == 1 && at_top && self.suppress == 0 {
                        match items[0].as_symbol() {
                            // A kernel definition where it is one is kernel code.
                            Some(head) if KERNEL_DEFINITIONS.contains(&head) => self.host = false,
                            // Their forms are top-level forms.
                            Some("progn" | "eval-when") => self.collectable = true,
                            _ => {}
                        }
                    }
                }
            }
        }
    }

    fn read_string(&mut self) -> Result<Form> {
        let start = self.mark();
        self.bump();
        let mut text = String::new();
        loop {
            let escape_start = self.mark();
            match self.bump() {
                None => {
                    return Err(Error::new(
                        &self.span_len(start, 1),
                        "unterminated string: no `\"` closes this `\"`",
                    ));
                }
                Some('"') => return Ok(Form::new(FormKind::Str(text), self.span_from(start))),
                Some('\\') => text.push(self.read_string_escape(escape_start)?),
                Some(c) => text.push(c),
            }
        }
    }

    /// The character an escape stands for; the cursor is just past the backslash.
    fn read_string_escape(&mut self, start: Mark) -> Result<char> {
        let Some(c) = self.bump() else {
            return Err(Error::new(
                &self.span_len(start, 1),
                "unterminated string escape",
            ));
        };
        Ok(match c {
            '"' => '"',
            '\\' => '\\',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            'x' => {
                let mut value = 0u8;
                for _ in 0..2 {
                    match self.peek().and_then(|c| c.to_digit(16)) {
                        Some(digit) => {
                            self.bump();
                            // Two hex digits are at most 0xff: no overflow.
                            value = value * 16 + digit as u8;
                        }
                        None => {
                            return Err(Error::new(
                                &self.span_from(start),
                                "`\\x` in a string needs two hexadecimal digits (`\\x41`)",
                            ));
                        }
                    }
                }
                char::from(value)
            }
            other => {
                return Err(Error::new(
                    &self.span_from(start),
                    format!(
                        "unknown string escape `\\{other}`; the escapes are \\\" \\\\ \\n \\t \\r \\0 \\xHH"
                    ),
                ));
            }
        })
    }

    /// `#` syntax: `#'f`, `#x`/`#b`/`#o`/`#NNr` numbers; in host code (see the module
    /// documentation) also Common Lisp's data syntax; everything else is an error.
    fn read_dispatch(&mut self) -> Result<Form> {
        let start = self.mark();
        self.bump();
        // An optional decimal argument: `#2A`, `#16r`, `#1=`.
        let mut argument = String::new();
        while let Some(c) = self.peek().filter(char::is_ascii_digit) {
            argument.push(c);
            self.bump();
        }
        let Some(sub) = self.peek() else {
            return Err(Error::new(
                &self.span_from(start),
                "`#` at the end of the text",
            ));
        };
        let written = format!("#{argument}{sub}");
        match sub.to_ascii_lowercase() {
            '\'' if argument.is_empty() => {
                self.bump();
                self.read_prefixed(start, "#'", "function")
            }
            'x' | 'b' | 'o' if argument.is_empty() => {
                self.bump();
                let radix = match sub.to_ascii_lowercase() {
                    'x' => 16,
                    'b' => 2,
                    _ => 8,
                };
                self.read_radix_integer(start, radix, &written)
            }
            'r' => {
                self.bump();
                match argument.parse::<u32>() {
                    Ok(radix @ 2..=36) => self.read_radix_integer(start, radix, &written),
                    _ => Err(Error::new(
                        &self.span_from(start),
                        format!("`{written}` needs a radix from 2 to 36 before the `r` (`#16r1f`)"),
                    )),
                }
            }
            '\\' => {
                self.bump();
                let name = self.read_character_name(start)?;
                let span = self.span_from(start);
                if self.suppress > 0 {
                    return Ok(Form::symbol("nil", span));
                }
                let c = character(&name).ok_or_else(|| {
                    Error::new(&span, format!("`#\\{name}` is not a character name Chorus knows (one character, a name such as Space, Newline, Tab, or U+XXXX)"))
                })?;
                self.host_only(&span, &format!("`#\\{name}` (a character)"))?;
                Ok(Form::new(FormKind::Str(c.to_string()), span))
            }
            '(' => {
                self.host_only(&self.span_len(start, 2), "`#(…)` (a vector)")?;
                let list = self.read_list()?;
                let span = self.span_of(start, self.mark());
                let mut items = vec![Form::symbol("vector", self.span_len(start, 1))];
                items.extend(list.as_list().unwrap_or_default().iter().cloned());
                Ok(Form::list(items, span))
            }
            '.' => {
                self.bump();
                let prefix = self.span_from(start);
                if !self.host_datum() {
                    return Err(Error::new(
                        &prefix,
                        "`#.` (read-time evaluation) is refused in kernel code: Chorus evaluates \
                         nothing while reading; compute the value with a macro",
                    ));
                }
                // Read (for its extent), never evaluated: the form is skipped host code.
                self.read_operand(start, &written)
            }
            ':' if argument.is_empty() => {
                let prefix = self.span_len(start, 2);
                if !self.host_datum() {
                    return Err(Error::new(
                        &prefix,
                        "`#:` (uninterned symbols) is not supported; names starting with `#:` are \
                         reserved for gensyms",
                    ));
                }
                self.bump();
                let token = self.read_token_text()?;
                let span = self.span_from(start);
                if token.text.is_empty() {
                    return Err(Error::new(&span, "`#:` must be followed by a symbol name"));
                }
                Ok(Form::symbol(token.text, span))
            }
            'p' | 'c' | 'a' | '=' => {
                self.bump();
                let span = self.span_from(start);
                let what = match sub.to_ascii_lowercase() {
                    'p' => "a pathname",
                    'c' => "a complex number",
                    'a' => "an array",
                    _ => "a labelled form",
                };
                self.host_only(&span, &format!("`{written}` ({what})"))?;
                self.read_operand(start, &written)
            }
            '*' | '#' => {
                self.bump();
                let token = self.read_token_text()?;
                let span = self.span_from(start);
                let what = if sub == '*' {
                    "a bit vector"
                } else {
                    "a label reference"
                };
                self.host_only(&span, &format!("`{written}{}` ({what})", token.text))?;
                Ok(Form::new(
                    FormKind::Str(format!("{written}{}", token.text)),
                    span,
                ))
            }
            // A line break after `#` would put the span's end past its line, and the message
            // would show an invisible character: name it and point at the `#` alone.
            _ if sub.is_whitespace() || sub.is_control() => Err(Error::new(
                &self.span_len(start, 1),
                format!(
                    "`#` followed by `{}` is not a reader syntax; `#` starts `#'f`, `#x`, `#b` or `#o`",
                    sub.escape_default()
                ),
            )),
            _ if self.suppress > 0 => {
                // Inside a skipped form anything reads: an unknown `#` syntax is a token.
                self.bump();
                self.read_token_text()?;
                Ok(Form::symbol("nil", self.span_from(start)))
            }
            _ => Err(Error::new(
                &self.span_of(
                    start,
                    Mark {
                        line: start.line,
                        column: start.column + 1 + argument.len() as u32 + 1,
                    },
                ),
                format!("the reader syntax `{written}` is not supported"),
            )),
        }
    }

    /// An error at `span` unless host-only syntax reads here (`what` names the syntax).
    fn host_only(&mut self, span: &Span, what: &str) -> Result<()> {
        if self.host_datum() {
            return Ok(());
        }
        Err(Error::new(
            span,
            format!(
                "{what} is not part of the kernel language; Common Lisp data syntax is read only \
                 in the host code of a whole source file, outside kernel definitions"
            ),
        ))
    }

    /// The form after a `#` prefix such as `#.` or `#p`, which the placeholder stands for.
    fn read_operand(&mut self, start: Mark, written: &str) -> Result<Form> {
        let prefix = self.span_from(start);
        self.skip_trivia()?;
        if matches!(self.peek(), None | Some(')')) {
            return Err(Error::new(
                &prefix,
                format!("expected a form after `{written}`"),
            ));
        }
        let form = self.read_form()?;
        let span = prefix.to(&form.span);
        Ok(Form::new(form.kind, span))
    }

    /// The name after `#\` (which began at `start`): its first character whatever it is, then
    /// a token's characters.
    fn read_character_name(&mut self, start: Mark) -> Result<String> {
        let Some(first) = self.bump() else {
            // The span is the `#\` itself: the end of the text has no column of its own.
            return Err(Error::new(
                &self.span_from(start),
                "`#\\` at the end of the text: expected a character",
            ));
        };
        let mut name = String::from(first);
        while let Some(c) = self.peek() {
            if c.is_whitespace() || is_terminating(c) {
                break;
            }
            name.push(c);
            self.bump();
        }
        Ok(name)
    }

    /// `#x1f`, `#16r1f`: the token after the prefix, as an integer in `radix`.
    fn read_radix_integer(&mut self, start: Mark, radix: u32, written: &str) -> Result<Form> {
        let token = self.read_token_text()?;
        let span = self.span_from(start);
        if token.escaped {
            return Err(Error::new(
                &span,
                format!("`{written}` must be followed by digits"),
            ));
        }
        let text = token.text.to_ascii_lowercase();
        match parse_radix_integer(&text, radix, &format!("{written}{}", token.text)) {
            Some(Ok(value)) => Ok(Form::new(
                FormKind::Int {
                    value,
                    suffix: IntSuffix::None,
                },
                span,
            )),
            // A host integer beyond 64 bits (Common Lisp has bignums) is only a placeholder.
            Some(Err(_)) if self.host_datum() => Ok(Form::symbol("nil", span)),
            Some(Err(message)) => Err(Error::new(&span, message)),
            None => Err(Error::new(
                &span,
                format!(
                    "`{written}{}` is not an integer in base {radix}",
                    token.text
                ),
            )),
        }
    }

    /// Reads a token (a symbol or a number).
    fn read_token(&mut self) -> Result<Form> {
        let start = self.mark();
        let token = self.read_token_text()?;
        let span = self.span_from(start);
        if self.suppress > 0 {
            // Inside a form `#+`/`#-` skips, a token is never interpreted.
            return Ok(Form::symbol("nil", span));
        }
        if !token.colons.is_empty() {
            return self.qualified_symbol(token, span);
        }
        if token.escaped {
            return symbol(token.text, span);
        }
        if token.text.chars().all(|c| c == '.') {
            return Err(Error::new(
                &span,
                if token.text.len() == 1 {
                    "a lone `.` is not allowed: dotted pairs such as (a . b) are not supported"
                } else {
                    "a token made only of dots is not allowed"
                },
            ));
        }
        match parse_number(&token.text) {
            Some(Ok(kind)) => Ok(Form::new(kind, span)),
            Some(Err(message)) => {
                if !self.host_datum() {
                    return Err(Error::new(&span, message));
                }
                // A ratio or a bignum in host code: a placeholder.
                Ok(match token.text.split_once('/') {
                    Some((n, d)) => Form::list(
                        vec![
                            Form::symbol("/", span.clone()),
                            Form::symbol(n, span.clone()),
                            Form::symbol(d, span.clone()),
                        ],
                        span,
                    ),
                    None => Form::symbol("nil", span),
                })
            }
            None => symbol(token.text, span),
        }
    }

    /// A token with unescaped colons: a keyword (`:restrict`) keeps its colon; `pkg:name` and
    /// `pkg::name` read as `name` (see the module documentation).
    fn qualified_symbol(&mut self, token: Token, span: Span) -> Result<Form> {
        let text = &token.text;
        let first = token.colons[0];
        let (marker_end, what) = match token.colons.as_slice() {
            [0] => return symbol(token.text, span),
            [0, ..] => {
                return Err(Error::new(
                    &span,
                    format!("`{text}`: a keyword has one colon, at its start"),
                ));
            }
            [c] => (c + 1, "`pkg:name`"),
            [c, d] if *d == c + 1 => (d + 1, "`pkg::name`"),
            _ => {
                return Err(Error::new(
                    &span,
                    format!(
                        "`{text}` has more than one package marker; a symbol is `name`, \
                         `pkg:name` or `pkg::name`"
                    ),
                ));
            }
        };
        let local = &text[marker_end..];
        if first == 0 || local.is_empty() {
            return Err(Error::new(
                &span,
                format!("`{text}` is not a symbol: {what} needs a name after the package"),
            ));
        }
        symbol(local.to_string(), span)
    }

    /// The characters of a token, folded as the Common Lisp reader folds them: unescaped
    /// characters to lower case, escaped ones (`|…|`, `\c`) as written.
    fn read_token_text(&mut self) -> Result<Token> {
        let mut text = String::new();
        let mut escaped = false;
        let mut colons = Vec::new();
        while let Some(c) = self.peek() {
            if c.is_whitespace() || is_terminating(c) {
                break;
            }
            if c == ':' {
                colons.push(text.len());
            }
            let at = self.mark();
            self.bump();
            match c {
                '\\' => {
                    escaped = true;
                    match self.bump() {
                        Some(c) => text.push(c),
                        None => {
                            return Err(Error::new(
                                &self.span_len(at, 1),
                                "`\\` at the end of the text: expected a character to escape",
                            ));
                        }
                    }
                }
                '|' => {
                    escaped = true;
                    loop {
                        match self.bump() {
                            None => {
                                return Err(Error::new(
                                    &self.span_len(at, 1),
                                    "unterminated `|`: no `|` closes this one",
                                ));
                            }
                            Some('|') => break,
                            Some('\\') => match self.bump() {
                                Some(c) => text.push(c),
                                None => {
                                    return Err(Error::new(
                                        &self.span_len(at, 1),
                                        "unterminated `|`: no `|` closes this one",
                                    ));
                                }
                            },
                            Some(c) => text.push(c),
                        }
                    }
                }
                c if c.is_ascii() => text.push(c.to_ascii_lowercase()),
                c => text.extend(c.to_lowercase()),
            }
        }
        Ok(Token {
            text,
            escaped,
            colons,
        })
    }
}

/// The text of a token and whether any of it was escaped (an escaped token is always a symbol).
struct Token {
    text: String,
    escaped: bool,
    /// Where unescaped `:` (package markers) are in `text`, in bytes.
    colons: Vec<usize>,
}

/// The character `#\name` stands for: one character as written, a Common Lisp name (any
/// case), or `U+XXXX`.
fn character(name: &str) -> Option<char> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Some(c);
    }
    let lower = name.to_ascii_lowercase();
    let named = match lower.as_str() {
        "space" => ' ',
        "newline" | "linefeed" => '\n',
        "tab" => '\t',
        "return" => '\r',
        "page" => '\u{c}',
        "backspace" => '\u{8}',
        "rubout" | "delete" | "del" => '\u{7f}',
        "nul" | "null" => '\0',
        "bell" | "bel" => '\u{7}',
        "escape" | "esc" | "altmode" => '\u{1b}',
        _ => {
            let hex = lower
                .strip_prefix("u+")
                .or_else(|| lower.strip_prefix('u'))?;
            return u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
        }
    };
    Some(named)
}

fn symbol(mut name: String, span: Span) -> Result<Form> {
    if name.starts_with(GENSYM_PREFIX) {
        return Err(Error::new(
            &span,
            format!("the symbol name `{name}` starts with `#:`, which is reserved for gensyms"),
        ));
    }
    name.shrink_to_fit();
    Ok(Form::new(FormKind::Symbol(name), span))
}

/// The largest magnitude an integer literal may have: any `uint64`, or its negation.
const INT_LIMIT: i128 = u64::MAX as i128;

/// Parses a number token (already folded to lower case). `None` means "not a number: a symbol";
/// `Some(Err)` is a token that is a number the kernel language cannot represent.
fn parse_number(text: &str) -> Option<Result<FormKind, String>> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    if let Some(hex) = body.strip_prefix("0x") {
        let (digits, suffix) = split_int_suffix(hex);
        return Some(int_kind(digits, 16, negative, suffix, text));
    }
    if let Some((num, den)) = body.split_once('/') {
        if is_digits(num) && is_digits(den) {
            return Some(Err(format!(
                "`{text}` is a ratio, which has no kernel type; write a float such as {}.0 / {}.0 \
                 or compute it with `floor`/`truncate`",
                sign_str(negative, num),
                den
            )));
        }
        return None;
    }
    // Integers, with Common Lisp's optional trailing decimal point (`1.` is the integer 1).
    let (int_body, suffix) = split_int_suffix(body);
    let int_digits = int_body.strip_suffix('.').unwrap_or(int_body);
    if is_digits(int_digits) && (suffix == IntSuffix::None || int_digits.len() == int_body.len()) {
        return Some(int_kind(int_digits, 10, negative, suffix, text));
    }
    parse_float(negative, body, text)
}

/// `1.5`, `.5`, `1e3`, `1.5f0`, `1.5d0`, `1.5f` (C's single suffix).
fn parse_float(negative: bool, body: &str, text: &str) -> Option<Result<FormKind, String>> {
    let (body, c_suffix) = match body.strip_suffix('f') {
        // C's `1.5f`, `1.f` and `1.5e3f`; but in `1f0` the `f` is an exponent marker.
        Some(rest) if rest.contains(['.', 'e']) && !rest.contains(['s', 'f', 'd', 'l']) => {
            (rest, true)
        }
        _ => (body, false),
    };
    let marker_at = body.find(['e', 's', 'f', 'd', 'l']);
    let (mantissa, exponent, precision) = match marker_at {
        Some(i) => {
            let precision = match &body[i..i + 1] {
                "d" | "l" => FloatPrecision::Double,
                _ => FloatPrecision::Single,
            };
            (&body[..i], Some(&body[i + 1..]), precision)
        }
        None => (body, None, FloatPrecision::Single),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (mantissa, None),
    };
    let mantissa_ok = is_digits_or_empty(whole)
        && fraction.is_none_or(is_digits_or_empty)
        && !(whole.is_empty() && fraction.is_none_or(str::is_empty));
    if !mantissa_ok {
        return None;
    }
    match exponent {
        // Without an exponent or C's `f` a float needs digits after its point (`1.` is an
        // integer).
        None if !c_suffix && fraction.is_none_or(str::is_empty) => return None,
        None => {}
        Some(e) => {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            if !is_digits(e) {
                return None;
            }
        }
    }
    let mut normalized = String::new();
    if negative {
        normalized.push('-');
    }
    normalized.push_str(if whole.is_empty() { "0" } else { whole });
    if let Some(f) = fraction.filter(|f| !f.is_empty()) {
        normalized.push('.');
        normalized.push_str(f);
    }
    if let Some(e) = exponent {
        normalized.push('e');
        normalized.push_str(e);
    }
    let value = match precision {
        FloatPrecision::Single => normalized.parse::<f32>().map(f64::from),
        FloatPrecision::Double => normalized.parse::<f64>(),
    };
    Some(match value {
        Ok(v) if v.is_finite() => Ok(FormKind::Float {
            value: v,
            precision,
        }),
        Ok(_) => Err(format!(
            "`{text}` is out of range for a {}",
            if precision == FloatPrecision::Single {
                "single float"
            } else {
                "double float"
            }
        )),
        Err(_) => Err(format!("`{text}` is not a valid float")),
    })
}

/// Splits `10ull` into `10` and its suffix; text without a suffix comes back whole, with
/// [`IntSuffix::None`].
fn split_int_suffix(text: &str) -> (&str, IntSuffix) {
    const SUFFIXES: [(&str, IntSuffix); 7] = [
        ("ull", IntSuffix::UL),
        ("llu", IntSuffix::UL),
        ("ul", IntSuffix::UL),
        ("lu", IntSuffix::UL),
        ("ll", IntSuffix::L),
        ("u", IntSuffix::U),
        ("l", IntSuffix::L),
    ];
    for (spelling, suffix) in SUFFIXES {
        if let Some(digits) = text.strip_suffix(spelling)
            && !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_hexdigit())
        {
            return (digits, suffix);
        }
    }
    (text, IntSuffix::None)
}

fn int_kind(
    digits: &str,
    radix: u32,
    negative: bool,
    suffix: IntSuffix,
    text: &str,
) -> Result<FormKind, String> {
    Ok(FormKind::Int {
        value: int_value(digits, radix, negative, text)?,
        suffix,
    })
}

/// The value of `digits` in `radix`, negated if `negative`; `text` is the whole token, for errors.
fn int_value(digits: &str, radix: u32, negative: bool, text: &str) -> Result<i128, String> {
    let valid = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
    if !valid {
        return Err(format!("`{text}` is not a valid integer"));
    }
    let magnitude = i128::from_str_radix(digits, radix)
        .ok()
        .filter(|m| *m <= INT_LIMIT)
        .ok_or_else(|| format!("the integer `{text}` does not fit in 64 bits"))?;
    Ok(if negative { -magnitude } else { magnitude })
}

/// `#x1f`, `#b-101` (`text` is what follows the `#x`; `written` the whole token, for errors):
/// `None` if the token is not an integer in that radix.
fn parse_radix_integer(text: &str, radix: u32, written: &str) -> Option<Result<i128, String>> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    Some(int_value(digits, radix, negative, written))
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_digits_or_empty(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn sign_str(negative: bool, digits: &str) -> String {
    if negative {
        format!("-{digits}")
    } else {
        digits.to_string()
    }
}
