//! Mutation of kernel text: byte edits, token swaps and splices of whole forms between the
//! seed corpus (every `.lisp` file of the repository) and generated modules.

use crate::rng::Rng;

/// Bytes that matter to the reader: delimiters, quotes, reader macros, escapes, digits and
/// the letters of radixes and exponents.
const INTERESTING_BYTES: &[u8] = b"()\"'`,@#|\\; \n\t0123456789.-+exbodfu:&*";

/// Tokens worth splicing in: literals at the edges, reader macros, keywords, special forms.
const TOKENS: &[&str] = &[
    "(",
    ")",
    "\"",
    "#|",
    "|#",
    "#\\",
    "#'",
    "#:",
    "#x",
    "#b",
    "#o",
    "#(",
    ",@",
    ",",
    "`",
    "'",
    ";",
    "|",
    "\\",
    "0",
    "-0",
    "1e400",
    "1d-400",
    "99999999999999999999999999999999999999",
    "-170141183460469231731687303715884105729",
    "#x-",
    "1.",
    ".",
    "...",
    "nil",
    "t",
    "&body",
    "&rest",
    "&optional",
    "&key",
    ":device",
    ":constant",
    ":shared",
    ":restrict",
    "int*",
    "float4",
    "void",
    "progn",
    "let",
    "set",
    "aref",
    "pointer",
    "defmacro",
    "defkernel",
    "defglobal",
    "macrolet",
    "symbol-macrolet",
    "gensym",
    "break",
    "continue",
    "return",
    "syncthreads",
    "\u{feff}",
    "\u{0}",
    "\u{7f}",
    "\u{200b}",
    "é",
    "\r\n",
    "\t",
];

/// A mutation of `text`, using `corpus` for splices.
/// The result is at most [`MAX_MUTANT_BYTES`] long: a mutation that would grow past it is
/// dropped.
pub fn mutate(rng: &mut Rng, text: &str, corpus: &[String]) -> String {
    let mut out = text.to_string();
    for _ in 0..1 + rng.below(4) {
        let donor = if corpus.is_empty() {
            text
        } else {
            &corpus[rng.below(corpus.len())]
        };
        let next = match rng.below(8) {
            0 => byte_edit(rng, &out),
            1 | 2 => token_edit(rng, &out),
            3 | 4 => splice(rng, &out, donor),
            5 => duplicate_form(rng, &out),
            6 => delete_form(rng, &out),
            _ => truncate(rng, &out),
        };
        if next.len() <= MAX_MUTANT_BYTES {
            out = next;
        }
    }
    out
}

/// The longest text a mutation makes (a duplicated form may otherwise grow without bound).
pub const MAX_MUTANT_BYTES: usize = 256 * 1024;

/// Byte offsets of character boundaries of `text` (including its end).
fn boundaries(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect()
}

fn byte_edit(rng: &mut Rng, text: &str) -> String {
    let cuts = boundaries(text);
    let at = *rng.pick(&cuts);
    let byte = *rng.pick(INTERESTING_BYTES) as char;
    let mut out = String::with_capacity(text.len() + 1);
    out.push_str(&text[..at]);
    match rng.below(3) {
        0 => out.push(byte),
        1 => {
            out.push(byte);
            let next = cuts.iter().find(|&&c| c > at).copied().unwrap_or(at);
            out.push_str(&text[next..]);
            return out;
        }
        _ => {
            let next = cuts.iter().find(|&&c| c > at).copied().unwrap_or(at);
            out.push_str(&text[next..]);
            return out;
        }
    }
    out.push_str(&text[at..]);
    out
}

/// Spans (start, end) of the whitespace-separated tokens of `text`.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let delimiter = c.is_whitespace() || c == '(' || c == ')';
        match (start, delimiter) {
            (None, false) => start = Some(i),
            (Some(s), true) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, text.len()));
    }
    spans
}

fn token_edit(rng: &mut Rng, text: &str) -> String {
    let spans = tokens(text);
    if spans.is_empty() {
        return rng.pick(TOKENS).to_string();
    }
    let (s, e) = *rng.pick(&spans);
    let replacement = if rng.one_in(2) {
        rng.pick(TOKENS).to_string()
    } else {
        let (s2, e2) = *rng.pick(&spans);
        text[s2..e2].to_string()
    };
    format!("{}{}{}", &text[..s], replacement, &text[e..])
}

/// Spans (start, end) of the parenthesised forms of `text` (strings and comments ignored
/// roughly: the mutator does not need to be exact).
fn forms(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut open = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' => open.push(i),
            ')' => {
                if let Some(s) = open.pop() {
                    spans.push((s, i + 1));
                }
            }
            _ => {}
        }
    }
    spans
}

fn splice(rng: &mut Rng, text: &str, donor: &str) -> String {
    let targets = forms(text);
    let donors = forms(donor);
    if targets.is_empty() || donors.is_empty() {
        return format!("{text}\n{donor}");
    }
    let (s, e) = *rng.pick(&targets);
    let (ds, de) = *rng.pick(&donors);
    format!("{}{}{}", &text[..s], &donor[ds..de], &text[e..])
}

fn duplicate_form(rng: &mut Rng, text: &str) -> String {
    let spans = forms(text);
    if spans.is_empty() {
        return text.to_string();
    }
    let (s, e) = *rng.pick(&spans);
    let most = if rng.one_in(10) { 200 } else { 3 };
    let copies = 1 + rng.below(most);
    let mut out = String::with_capacity(text.len() + copies * (e - s + 1));
    out.push_str(&text[..e]);
    for _ in 0..copies {
        out.push(' ');
        out.push_str(&text[s..e]);
    }
    out.push_str(&text[e..]);
    out
}

fn delete_form(rng: &mut Rng, text: &str) -> String {
    let spans = forms(text);
    if spans.is_empty() {
        return text.to_string();
    }
    let (s, e) = *rng.pick(&spans);
    format!("{}{}", &text[..s], &text[e..])
}

fn truncate(rng: &mut Rng, text: &str) -> String {
    let cuts = boundaries(text);
    text[..*rng.pick(&cuts)].to_string()
}
