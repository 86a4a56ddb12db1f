//! The reader: every token kind, every error (message and span), and two properties: printing a
//! form and reading it back gives the same form, and no text makes the reader panic.

use chorus_lang::form::{FloatPrecision, IntSuffix};
use chorus_lang::reader::MAX_NESTING;
use chorus_lang::{Form, FormKind, Span, read_one, read_str};
use proptest::prelude::*;

fn read(text: &str) -> Form {
    read_one(text, "t.lisp").unwrap_or_else(|e| panic!("reading {text:?}: {e}"))
}

/// The error for `text`, as `LINE:COL-ENDLINE:ENDCOL message`.
fn error(text: &str) -> String {
    match read_str(text, "t.lisp") {
        Ok(forms) => panic!("{text:?} read as {forms:?}, expected an error"),
        Err(e) => {
            assert_eq!(&*e.span.file, "t.lisp");
            format!(
                "{}:{}-{}:{} {}",
                e.span.line, e.span.column, e.span.end_line, e.span.end_column, e.message
            )
        }
    }
}

fn sym(text: &str) -> String {
    match read(text).kind {
        FormKind::Symbol(s) => s,
        other => panic!("{text:?} read as {other:?}, expected a symbol"),
    }
}

fn int(text: &str) -> (i128, IntSuffix) {
    match read(text).kind {
        FormKind::Int { value, suffix } => (value, suffix),
        other => panic!("{text:?} read as {other:?}, expected an integer"),
    }
}

fn float(text: &str) -> (f64, FloatPrecision) {
    match read(text).kind {
        FormKind::Float { value, precision } => (value, precision),
        other => panic!("{text:?} read as {other:?}, expected a float"),
    }
}

fn span(form: &Form) -> (u32, u32, u32, u32) {
    let Span {
        line,
        column,
        end_line,
        end_column,
        ..
    } = form.span;
    (line, column, end_line, end_column)
}

#[test]
fn symbols_as_the_seed_spells_them() {
    for name in [
        "vec-add-kernel",
        "float*",
        "size-t",
        ":restrict",
        "%foo",
        "&rest",
        "1+",
        "1-",
        "+",
        "-",
        "*",
        "/",
        "<=",
        "/=",
        "nil",
        "t",
        "a.b",
        "a#b",
        "+.",
        "1f",
        "10q",
        "1.5d",
        "0f",
        ".a",
        "-a",
    ] {
        assert_eq!(sym(name), name);
    }
}

#[test]
fn symbols_fold_to_lower_case_unless_escaped() {
    assert_eq!(sym("VecAdd_Kernel"), "vecadd_kernel");
    assert_eq!(sym("FLOAT*"), "float*");
    assert_eq!(sym("|Mixed Case|"), "Mixed Case");
    assert_eq!(sym("ab|Cd|Ef"), "abCdef");
    assert_eq!(sym("\\Abc"), "Abc");
    assert_eq!(sym("a\\(b"), "a(b");
    assert_eq!(sym("|a\\|b|"), "a|b");
    assert_eq!(sym("||"), "");
    // Escaped digits are a symbol, not a number.
    assert_eq!(sym("|12|"), "12");
    assert_eq!(sym("\\1"), "1");
}

#[test]
fn integers() {
    assert_eq!(int("1"), (1, IntSuffix::None));
    assert_eq!(int("0"), (0, IntSuffix::None));
    assert_eq!(int("-5"), (-5, IntSuffix::None));
    assert_eq!(int("+5"), (5, IntSuffix::None));
    assert_eq!(int("1."), (1, IntSuffix::None));
    assert_eq!(int("#x10"), (16, IntSuffix::None));
    assert_eq!(int("#XfF"), (255, IntSuffix::None));
    assert_eq!(int("#x-10"), (-16, IntSuffix::None));
    assert_eq!(int("#b101"), (5, IntSuffix::None));
    assert_eq!(int("#o17"), (15, IntSuffix::None));
    assert_eq!(int("0x10"), (16, IntSuffix::None));
    assert_eq!(int("0XFF"), (255, IntSuffix::None));
    assert_eq!(int("-0x10"), (-16, IntSuffix::None));
    assert_eq!(
        int("18446744073709551615"),
        (u64::MAX as i128, IntSuffix::None)
    );
    assert_eq!(
        int("-18446744073709551615"),
        (-(u64::MAX as i128), IntSuffix::None)
    );
}

#[test]
fn integer_suffixes() {
    assert_eq!(int("10u"), (10, IntSuffix::U));
    assert_eq!(int("10U"), (10, IntSuffix::U));
    assert_eq!(int("10l"), (10, IntSuffix::L));
    assert_eq!(int("10ll"), (10, IntSuffix::L));
    assert_eq!(int("10LL"), (10, IntSuffix::L));
    assert_eq!(int("10ul"), (10, IntSuffix::UL));
    assert_eq!(int("10ull"), (10, IntSuffix::UL));
    assert_eq!(int("10lu"), (10, IntSuffix::UL));
    assert_eq!(int("10llu"), (10, IntSuffix::UL));
    assert_eq!(int("0xffu"), (255, IntSuffix::U));
    assert_eq!(int("0x1ull"), (1, IntSuffix::UL));
    assert_eq!(int("-1u"), (-1, IntSuffix::U));
}

#[test]
fn floats_as_common_lisp_reads_them() {
    use FloatPrecision::{Double, Single};
    assert_eq!(float("1.0"), (1.0, Single));
    assert_eq!(float("1e-3"), (f64::from(1e-3f32), Single));
    assert_eq!(float(".5"), (0.5, Single));
    assert_eq!(float("-.5"), (-0.5, Single));
    assert_eq!(float("+1.5"), (1.5, Single));
    assert_eq!(float("1.0f0"), (1.0, Single));
    assert_eq!(float("1.0s0"), (1.0, Single));
    assert_eq!(float("1.0e0"), (1.0, Single));
    assert_eq!(float("1.0E2"), (100.0, Single));
    assert_eq!(float("2f3"), (2000.0, Single));
    assert_eq!(float("1.0d0"), (1.0, Double));
    assert_eq!(float("1d-3"), (1e-3, Double));
    assert_eq!(float("1.0l0"), (1.0, Double));
    assert_eq!(float("1.D+2"), (100.0, Double));
    assert_eq!(float("-0.0"), (-0.0, Single));
    assert!(float("-0.0").0.is_sign_negative());
    // C's single suffix.
    assert_eq!(float("1.5f"), (1.5, Single));
    assert_eq!(float("1.5e3f"), (1500.0, Single));
    assert_eq!(float("1.F"), (1.0, Single));
    // A single float is rounded to f32, a double is not.
    assert_eq!(float("0.1"), (f64::from(0.1f32), Single));
    assert_eq!(float("0.1d0"), (0.1, Double));
}

#[test]
fn strings_and_escapes() {
    let s = |text: &str| match read(text).kind {
        FormKind::Str(s) => s,
        other => panic!("{text:?} read as {other:?}"),
    };
    assert_eq!(s(r#""chorus %d""#), "chorus %d");
    assert_eq!(s(r#""a\"b\\c""#), "a\"b\\c");
    assert_eq!(s(r#""\n\t\r\0""#), "\n\t\r\0");
    assert_eq!(s(r#""\x41\x7e""#), "A~");
    assert_eq!(s("\"two\nlines\""), "two\nlines");
    assert_eq!(s(r#""""#), "");
    assert_eq!(s(r#""MiXed; (not a comment)""#), "MiXed; (not a comment)");
}

#[test]
fn comments() {
    let forms = read_str(
        "; line comment\n(a ; inside\n b) #| block #| nested |# still |# c\n#|x|#d ;; end",
        "t.lisp",
    )
    .unwrap();
    let printed: Vec<String> = forms.iter().map(|f| f.to_string()).collect();
    assert_eq!(printed, ["(a b)", "c", "d"]);
    assert!(read_str("  ; only a comment", "t.lisp").unwrap().is_empty());
    assert!(read_str("", "t.lisp").unwrap().is_empty());
}

#[test]
fn quote_family() {
    assert_eq!(read("'x").to_string(), "'x");
    let q = read("'x");
    let items = q.as_list().unwrap();
    assert!(items[0].is_symbol("quote") && items[1].is_symbol("x"));
    for (text, head) in [
        ("`x", "quasiquote"),
        (",x", "unquote"),
        (",@x", "unquote-splicing"),
        ("#'f", "function"),
    ] {
        let form = read(text);
        let (h, args) = form.as_call().unwrap();
        assert_eq!(h, head, "{text}");
        assert!(
            args.len() == 1
                && args[0].is_symbol(text.trim_start_matches(['`', ',', '@', '#', '\'']))
        );
    }
    assert_eq!(read("`(a ,b ,@c)").to_string(), "`(a ,b ,@c)");
    assert_eq!(read("' ; comment\n x").to_string(), "'x");
}

#[test]
fn lists_and_nil() {
    let form = read("(defkernel vec-add-kernel (void ((a float*) (n int))))");
    assert_eq!(
        form.to_string(),
        "(defkernel vec-add-kernel (void ((a float*) (n int))))"
    );
    assert!(read("()").is_nil());
    assert!(read("nil").is_nil());
    assert!(read("( )").as_list().unwrap().is_empty());
}

#[test]
fn spans_are_one_based_and_end_past_the_last_character() {
    let forms = read_str("(if (< i n)\n    (set x 1.0))\nfoo", "k.lisp").unwrap();
    assert_eq!(span(&forms[0]), (1, 1, 2, 17));
    assert_eq!(&*forms[0].span.file, "k.lisp");
    let items = forms[0].as_list().unwrap();
    assert_eq!(span(&items[0]), (1, 2, 1, 4));
    assert_eq!(span(&items[1]), (1, 5, 1, 12));
    assert_eq!(span(&items[2]), (2, 5, 2, 16));
    assert_eq!(span(&items[2].as_list().unwrap()[2]), (2, 12, 2, 15));
    assert_eq!(span(&forms[1]), (3, 1, 3, 4));
    // A quote's head symbol is the quote character; the list spans both.
    let q = read("  'abc");
    assert_eq!(span(&q), (1, 3, 1, 7));
    assert_eq!(span(&q.as_list().unwrap()[0]), (1, 3, 1, 4));
    let s = read("\"a\nb\"");
    assert_eq!(span(&s), (1, 1, 2, 3));
    // Columns count characters, not bytes.
    let u = read_str("\"é\" x", "t.lisp").unwrap();
    assert_eq!(span(&u[1]), (1, 5, 1, 6));
}

#[test]
fn read_one_wants_exactly_one_form() {
    assert_eq!(
        read_one("", "t.lisp").unwrap_err().to_string(),
        "t.lisp:1:1: expected a form, found the end of the text"
    );
    assert_eq!(
        read_one("a  b", "t.lisp").unwrap_err().to_string(),
        "t.lisp:1:4: expected one form, found a second one here"
    );
}

#[test]
fn structural_errors_point_at_the_culprit() {
    assert_eq!(error("(a b))"), "1:6-1:7 unbalanced `)`: no `(` is open");
    assert_eq!(error(")"), "1:1-1:2 unbalanced `)`: no `(` is open");
    assert_eq!(
        error("(a\n  (b c)"),
        "1:1-1:2 unterminated list: no `)` closes this `(`"
    );
    assert_eq!(
        error("(a (b\n c)"),
        "1:1-1:2 unterminated list: no `)` closes this `(`"
    );
    assert_eq!(
        error("x \"abc"),
        "1:3-1:4 unterminated string: no `\"` closes this `\"`"
    );
    assert_eq!(
        error("a #| x #| y |# z"),
        "1:3-1:5 unterminated block comment: no `|#` closes this `#|`"
    );
    assert_eq!(
        error("#| x |# #| y #| z |# "),
        "1:9-1:11 unterminated block comment: no `|#` closes this `#|`"
    );
    assert_eq!(
        error("|abc"),
        "1:1-1:2 unterminated `|`: no `|` closes this one"
    );
    assert_eq!(
        error("ab\\"),
        "1:3-1:4 `\\` at the end of the text: expected a character to escape"
    );
    assert_eq!(error("(a ')"), "1:4-1:5 expected a form after ' (quote)");
    assert_eq!(error("`"), "1:1-1:2 expected a form after ` (quasiquote)");
    assert_eq!(
        error("(,@)"),
        "1:2-1:4 expected a form after ,@ (unquote-splicing)"
    );
    assert_eq!(error("#'"), "1:1-1:3 expected a form after #' (function)");
}

#[test]
fn token_errors() {
    assert_eq!(
        error("(a . b)"),
        "1:4-1:5 a lone `.` is not allowed: dotted pairs such as (a . b) are not supported"
    );
    assert_eq!(
        error("..."),
        "1:1-1:4 a token made only of dots is not allowed"
    );
    assert_eq!(
        error("(+ 1/2 x)"),
        "1:4-1:7 `1/2` is a ratio, which has no kernel type; write a float such as 1.0 / 2.0 or \
         compute it with `floor`/`truncate`"
    );
    assert!(error("-3/4").contains("-3.0 / 4.0"));
    assert_eq!(
        error("18446744073709551616"),
        "1:1-1:21 the integer `18446744073709551616` does not fit in 64 bits"
    );
    assert_eq!(error("0xzz"), "1:1-1:5 `0xzz` is not a valid integer");
    assert_eq!(
        error("1e39"),
        "1:1-1:5 `1e39` is out of range for a single float"
    );
    assert_eq!(
        error("1d309"),
        "1:1-1:6 `1d309` is out of range for a double float"
    );
    assert_eq!(
        error("(aref a [i])"),
        "1:9-1:10 `[` is not part of the kernel language; index arrays with (aref a i)"
    );
    assert_eq!(
        error("]"),
        "1:1-1:2 `]` is not part of the kernel language; index arrays with (aref a i)"
    );
}

#[test]
fn string_escape_errors() {
    assert_eq!(
        error(r#""a\qb""#),
        "1:3-1:5 unknown string escape `\\q`; the escapes are \\\" \\\\ \\n \\t \\r \\0 \\xHH"
    );
    assert_eq!(
        error(r#""\x4""#),
        "1:2-1:5 `\\x` in a string needs two hexadecimal digits (`\\x41`)"
    );
    assert_eq!(error("\"abc\\"), "1:5-1:6 unterminated string escape");
}

/// Found by fuzzing (fuzz/README.md): `#` before a line break gave a span ending past its
/// line and a message with a raw line break in it.
#[test]
fn hash_before_whitespace_is_located_on_its_own_line() {
    assert_eq!(
        error("(a #\n b)"),
        "1:4-1:5 `#` followed by `\\n` is not a reader syntax; `#` starts `#'f`, `#x`, `#b` or `#o`"
    );
    assert_eq!(
        error("#\t"),
        "1:1-1:2 `#` followed by `\\t` is not a reader syntax; `#` starts `#'f`, `#x`, `#b` or `#o`"
    );
}

#[test]
fn dispatch_errors() {
    assert_eq!(
        error("#(1 2)"),
        "1:1-1:3 `#(…)` (a vector) is not part of the kernel language; Common Lisp data syntax \
         is read only in the host code of a whole source file, outside kernel definitions"
    );
    assert_eq!(
        error("#\\a"),
        "1:1-1:4 `#\\a` (a character) is not part of the kernel language; Common Lisp data \
         syntax is read only in the host code of a whole source file, outside kernel definitions"
    );
    assert_eq!(
        error("#?"),
        "1:1-1:3 the reader syntax `#?` is not supported"
    );
    assert_eq!(error("x #"), "1:3-1:4 `#` at the end of the text");
    assert_eq!(error("#xfg"), "1:1-1:5 `#xfg` is not an integer in base 16");
    assert_eq!(
        error("#b102"),
        "1:1-1:6 `#b102` is not an integer in base 2"
    );
    assert_eq!(
        error("#x10000000000000000"),
        "1:1-1:20 the integer `#x10000000000000000` does not fit in 64 bits"
    );
    assert_eq!(error("#o|7|"), "1:1-1:6 `#o` must be followed by digits");
    assert_eq!(
        error("#:g1"),
        "1:1-1:3 `#:` (uninterned symbols) is not supported; names starting with `#:` are \
         reserved for gensyms"
    );
    assert_eq!(
        error("|#:g1|"),
        "1:1-1:7 the symbol name `#:g1` starts with `#:`, which is reserved for gensyms"
    );
}

#[test]
fn nesting_is_limited() {
    let deep = "(".repeat(MAX_NESTING + 10) + &")".repeat(MAX_NESTING + 10);
    assert!(error(&deep).contains(&format!("forms nest more than {MAX_NESTING} deep")));
    let quotes = "'".repeat(MAX_NESTING + 10) + "x";
    assert!(error(&quotes).contains("nest more than"));
    let ok = "(".repeat(MAX_NESTING - 1) + &")".repeat(MAX_NESTING - 1);
    assert!(read_str(&ok, "t.lisp").is_ok());
}

#[test]
fn gensyms_print_as_uninterned_symbols() {
    let g = Form::symbol("#:g12", Span::generated());
    assert_eq!(g.to_string(), "#:g12");
    assert_eq!(
        Form::symbol("#:Odd", Span::generated()).to_string(),
        "|#:Odd|"
    );
}

#[test]
fn printer_escapes_what_the_reader_would_change() {
    for (name, printed) in [
        ("Abc", "|Abc|"),
        ("1+", "|1+|"),
        ("12", "|12|"),
        (".5", "|.5|"),
        (".", "|.|"),
        ("a b", "|a b|"),
        ("a|b", "|a\\|b|"),
        ("a[0]", "|a[0]|"),
        ("", "||"),
    ] {
        let form = Form::symbol(name, Span::generated());
        assert_eq!(form.to_string(), printed);
        assert!(read(printed).same(&form), "{printed}");
    }
    let s = Form::new(FormKind::Str("\0\u{1}\u{7f}é".into()), Span::generated());
    assert_eq!(s.to_string(), "\"\\0\\x01\\x7fé\"");
}

#[test]
fn pretty_printing_breaks_long_lists() {
    let form = read(
        "(defkernel k (void ((a float*) (n int))) (let ((i 0) (j 1)) (if (< i n) (set (aref a i) '(1 2)))))",
    );
    assert_eq!(form.pretty(200), form.to_string());
    assert_eq!(
        form.pretty(30),
        "(defkernel k\n  (void ((a float*) (n int)))\n  (let ((i 0) (j 1))\n    (if (< i n)\n      (set (aref a i) '(1 2)))))"
    );
    assert_eq!(
        read("(let ((alpha (f 1 2 3)) (beta (g 4 5 6))) x)").pretty(20),
        "(let ((alpha (f 1\n               2\n               3))\n      (beta (g 4\n              5\n              6)))\n  x)"
    );
}

/// Forms the reader can produce: no gensym names, finite floats, integers within 64 bits.
fn arb_form() -> impl Strategy<Value = Form> {
    let span = Span::generated();
    let (s1, s2, s3, s4) = (span.clone(), span.clone(), span.clone(), span.clone());
    let symbol = prop_oneof![
        "[a-z*+%&:/<>=!?_$~^@.0-9-]{1,12}",
        "\\PC{0,8}",
        Just("1+".to_string()),
        Just("nil".to_string()),
    ]
    .prop_filter("gensym names are not readable", |s| !s.starts_with("#:"))
    .prop_map(move |s| Form::symbol(s, s1.clone()));
    let suffix = prop_oneof![
        Just(IntSuffix::None),
        Just(IntSuffix::U),
        Just(IntSuffix::L),
        Just(IntSuffix::UL)
    ];
    let int = (-(u64::MAX as i128)..=u64::MAX as i128, suffix)
        .prop_map(move |(value, suffix)| Form::new(FormKind::Int { value, suffix }, s2.clone()));
    let float = prop_oneof![
        any::<f32>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|v| (f64::from(v), FloatPrecision::Single)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|v| (v, FloatPrecision::Double)),
    ]
    .prop_map(move |(value, precision)| {
        Form::new(FormKind::Float { value, precision }, s3.clone())
    });
    let string = any::<String>().prop_map(move |s| Form::new(FormKind::Str(s), s4.clone()));
    let leaf = prop_oneof![symbol, int, float, string];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        let span = span.clone();
        prop::collection::vec(inner, 0..6).prop_map(move |items| Form::list(items, span.clone()))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn printing_then_reading_gives_the_same_form(form in arb_form()) {
        let text = form.to_string();
        let back = read_one(&text, "p.lisp").map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert!(back.same(&form), "{} read back as {}", text, back);
    }

    #[test]
    fn pretty_printing_then_reading_gives_the_same_form(form in arb_form(), width in 0usize..60) {
        let text = form.pretty(width);
        let back = read_one(&text, "p.lisp").map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert!(back.same(&form), "{} read back as {}", text, back);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,64}") {
        let _ = read_str(&text, "p.lisp");
    }

    #[test]
    fn lisp_like_text_never_panics(text in "[()'`,@#|\\\\\";a-z0-9.+\\-xbo: \n]{0,80}") {
        let _ = read_str(&text, "p.lisp");
    }
}
