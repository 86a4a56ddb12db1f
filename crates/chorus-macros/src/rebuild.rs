//! Kernel text rebuilt from Rust tokens.
//!
//! Rust's lexer splits `vec-add-kernel` into `vec` `-` `add` `-` `kernel` and `float*` into
//! `float` `*`. Every token keeps its line and column, so writing each token's text at its own
//! position gives back the source as the user typed it: tokens that touch in the source touch in
//! the text and read as one symbol, tokens separated by white space stay separated, and a
//! position in the text is the same position in the Rust file. Rust comments (`//`, `/* */` and
//! doc comments) are not tokens, so they become white space.
//!
//! This module uses `proc_macro2`, so it runs (and is tested) outside a procedural macro too.

use proc_macro2::{Delimiter, Spacing, Span, TokenStream, TokenTree};

/// One token of the input and where its text starts in the rebuilt text.
#[derive(Clone, Debug)]
pub struct Placed {
    /// 1-based line in the rebuilt text.
    pub line: u32,
    /// 1-based column (in characters) in the rebuilt text.
    pub column: u32,
    /// The token's span, to point compiler errors at it.
    pub span: Span,
}

/// The kernel text of a `defkernel!` input.
#[derive(Clone, Debug)]
pub struct Rebuilt {
    /// The text: every token's text at its line and column, white space between.
    pub text: String,
    /// The file the tokens came from, as rustc names it in diagnostics.
    pub file: String,
    /// The tokens in order of their position in `text`.
    pub tokens: Vec<Placed>,
}

impl Rebuilt {
    /// The span of the token at `line`:`column` of the text, or, when no token starts exactly
    /// there, of the last token that starts before it. `None` before the first token.
    pub fn span_at(&self, line: u32, column: u32) -> Option<Span> {
        let after = self
            .tokens
            .partition_point(|t| (t.line, t.column) <= (line, column));
        after.checked_sub(1).map(|i| self.tokens[i].span)
    }
}

/// A token's text and span, with groups opened into their delimiters and contents.
struct Piece {
    text: String,
    span: Span,
}

/// Rebuilds the kernel text of `input`.
///
/// A token whose recorded position is not after the previous token's end (tokens pasted in by a
/// `macro_rules!` macro can point anywhere) is written one space after the previous token
/// instead; its position in the text then differs from its position in the file, and
/// [`Rebuilt::span_at`] still maps it back to its span.
pub fn rebuild(input: TokenStream) -> Rebuilt {
    let mut pieces = Vec::new();
    flatten(input, &mut pieces);
    let file = pieces.first().map(|p| p.span.file()).unwrap_or_default();

    let mut text = String::new();
    let mut tokens = Vec::with_capacity(pieces.len());
    // The 1-based position where the next character of `text` goes.
    let (mut line, mut column) = (1u32, 1u32);
    for piece in pieces {
        let start = piece.span.start();
        // proc_macro2 columns are 0-based; the text's (and chorus_lang's) are 1-based.
        let (want_line, want_column) = (start.line as u32, start.column as u32 + 1);
        if start.line > 0 && (want_line, want_column) >= (line, column) {
            if want_line > line {
                text.extend(std::iter::repeat_n('\n', (want_line - line) as usize));
                (line, column) = (want_line, 1);
            }
            text.extend(std::iter::repeat_n(' ', (want_column - column) as usize));
            column = want_column;
        } else if !text.is_empty() {
            text.push(' ');
            column += 1;
        }
        tokens.push(Placed {
            line,
            column,
            span: piece.span,
        });
        for c in piece.text.chars() {
            if c == '\n' {
                (line, column) = (line + 1, 1);
            } else {
                column += 1;
            }
        }
        text.push_str(&piece.text);
    }
    Rebuilt { text, file, tokens }
}

/// Appends the pieces of `stream` to `out`, in source order.
fn flatten(stream: TokenStream, out: &mut Vec<Piece>) {
    let trees: Vec<TokenTree> = stream.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        if let Some(len) = doc_comment_len(&trees[i..]) {
            i += len;
            continue;
        }
        if let Some(piece) = lifetime(&trees[i..]) {
            out.push(piece);
            i += 2;
            continue;
        }
        match &trees[i] {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    // An invisible group (a `macro_rules!` fragment): only its contents.
                    Delimiter::None => ("", ""),
                };
                if !open.is_empty() {
                    out.push(Piece {
                        text: open.into(),
                        span: group.span_open(),
                    });
                }
                flatten(group.stream(), out);
                if !close.is_empty() {
                    out.push(Piece {
                        text: close.into(),
                        span: group.span_close(),
                    });
                }
            }
            TokenTree::Ident(ident) => out.push(Piece {
                text: ident.to_string(),
                span: ident.span(),
            }),
            TokenTree::Punct(punct) => out.push(Piece {
                text: punct.as_char().to_string(),
                span: punct.span(),
            }),
            TokenTree::Literal(literal) => out.push(Piece {
                text: literal.to_string(),
                span: literal.span(),
            }),
        }
        i += 1;
    }
}

/// A lifetime (`'x`, which the kernel text means as `(quote x)`) is a `'` joined to an
/// identifier. rustc gives both tokens the span of the whole lifetime, so placed one by one the
/// identifier would land one column late: the pair is one piece at the `'`.
fn lifetime(trees: &[TokenTree]) -> Option<Piece> {
    match trees {
        [TokenTree::Punct(quote), TokenTree::Ident(ident), ..]
            if quote.as_char() == '\'' && quote.spacing() == Spacing::Joint =>
        {
            Some(Piece {
                text: format!("'{ident}"),
                span: quote.span(),
            })
        }
        _ => None,
    }
}

/// Rust turns a doc comment (`/// text`, `//! text`) into the tokens `# [doc = "text"]` (or
/// `# ! [doc = …]`). They are comments to the kernel text too: returns how many trees to skip.
fn doc_comment_len(trees: &[TokenTree]) -> Option<usize> {
    let is_punct =
        |tree: &TokenTree, c: char| matches!(tree, TokenTree::Punct(p) if p.as_char() == c);
    if !is_punct(trees.first()?, '#') {
        return None;
    }
    let bang = trees.get(1).is_some_and(|t| is_punct(t, '!'));
    let index = if bang { 2 } else { 1 };
    match trees.get(index)? {
        TokenTree::Group(group) if group.delimiter() == Delimiter::Bracket => {
            let mut inner = group.stream().into_iter();
            match (inner.next(), inner.next(), inner.next(), inner.next()) {
                (
                    Some(TokenTree::Ident(doc)),
                    Some(TokenTree::Punct(eq)),
                    Some(TokenTree::Literal(_)),
                    None,
                ) if doc == "doc" && eq.as_char() == '=' => Some(index + 1),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rebuilds `source` as if it were the body of a `defkernel!` invocation.
    fn rebuilt(source: &str) -> Rebuilt {
        rebuild(
            source
                .parse::<TokenStream>()
                .expect("the test source lexes as Rust"),
        )
    }

    #[test]
    fn reproduces_the_seed_source_at_its_positions() {
        let seed = "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (if (< i n)
        (set (aref c i)
             (+ (aref a i) (aref b i))))))";
        assert_eq!(rebuilt(seed).text, seed);
    }

    #[test]
    fn touching_tokens_join_and_separated_tokens_stay_apart() {
        let source = "(x int* :restrict) %foo 1.0d0 1.5f -1 (- a b) /= <= &optional ,@body #'f 1+";
        assert_eq!(rebuilt(source).text, source);
        assert_eq!(rebuilt("(a  -  b)").text, "(a  -  b)");
    }

    #[test]
    fn positions_equal_the_rust_source_across_lines() {
        let source = "\n\n    (defkernel k (void ())\n      (return))";
        let r = rebuilt(source);
        assert_eq!(r.text, source);
        let first = &r.tokens[0];
        assert_eq!((first.line, first.column), (3, 5));
        let ret = r
            .tokens
            .iter()
            .find(|t| (t.line, t.column) == (4, 8))
            .expect("`return` is placed");
        assert_eq!(ret.span.start().line, 4);
        assert_eq!(ret.span.start().column, 7);
    }

    #[test]
    fn comments_become_white_space() {
        let r = rebuilt("(a // one\n b /* two */ c)\n/// doc\n(d)\n//! inner\n(e)");
        assert_eq!(r.text, "(a\n b           c)\n\n(d)\n\n(e)");
    }

    #[test]
    fn lifetimes_and_strings_keep_their_text() {
        assert_eq!(
            rebuilt("(list 'x \"a \\\"b\\\"\")").text,
            "(list 'x \"a \\\"b\\\"\")"
        );
        assert_eq!(
            rebuilt("(printf \"line\nbreak\" 1)").text,
            "(printf \"line\nbreak\" 1)"
        );
    }

    #[test]
    fn a_lifetime_token_reads_as_quote() {
        let r = rebuilt("(list 'x #'f)");
        let forms = chorus_lang::read_str(&r.text, &r.file).expect("the text reads");
        assert_eq!(forms.len(), 1);
        assert_eq!(forms[0].to_string(), "(list 'x (function f))");
        let (_, items) = forms[0].as_call().unwrap();
        assert_eq!(
            items[0].as_call().map(|(head, rest)| (head, rest.len())),
            Some(("quote", 1))
        );
        assert!(items[0].as_list().unwrap()[1].is_symbol("x"));
    }

    #[test]
    fn joined_tokens_read_as_one_symbol_at_the_rust_position() {
        let r = rebuilt("\n  (x int* :restrict %foo vec-add-kernel 1.0d0)");
        let forms = chorus_lang::read_str(&r.text, &r.file).expect("the text reads");
        let items = forms[0].as_list().unwrap();
        let texts: Vec<String> = items.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            texts,
            ["x", "int*", ":restrict", "%foo", "vec-add-kernel", "1.0d0"]
        );
        let kernel = &items[4];
        assert_eq!((kernel.span.line, kernel.span.column), (2, 26));
    }

    #[test]
    fn text_after_a_multi_line_string_keeps_its_position() {
        let source = "(a \"x\ny\" b\n  c)";
        let r = rebuilt(source);
        assert_eq!(r.text, source);
        let b = r
            .tokens
            .iter()
            .find(|t| t.span.start().line == 2 && t.span.start().column == 3)
            .unwrap();
        assert_eq!((b.line, b.column), (2, 4));
    }

    #[test]
    fn span_at_finds_the_token_that_starts_at_or_before_a_position() {
        let r = rebuilt("(set (aref c i)\n     x)");
        let at = |line, column| {
            r.span_at(line, column)
                .map(|s| (s.start().line, s.start().column))
        };
        assert_eq!(at(1, 6), Some((1, 5)));
        assert_eq!(at(1, 8), Some((1, 6)));
        assert_eq!(at(2, 6), Some((2, 5)));
        assert_eq!(at(9, 1), Some((2, 6)));
        assert!(rebuilt("").span_at(1, 1).is_none());
    }

    #[test]
    fn tokens_out_of_order_are_separated_by_a_space() {
        // Tokens whose spans point backwards, as `macro_rules!` can produce: two copies of one
        // stream both start at 1:1.
        let one: TokenStream = "(a b)".parse().unwrap();
        let mut twice = one.clone();
        twice.extend(one);
        let r = rebuild(twice);
        assert_eq!(r.text, "(a b) ( a b )");
        assert_eq!(r.tokens.len(), 8);
        assert!(
            r.tokens
                .windows(2)
                .all(|w| (w[0].line, w[0].column) < (w[1].line, w[1].column))
        );
    }
}
