//! C's `printf` formatting, for the kernel `printf` statement.
//!
//! Supports the conversions `d i u x X o c s p f F e E g G a A` and `%%`, the flags
//! `- + space 0 #`, a width and a precision (digits or `*`, which reads an `int` argument) and
//! the length modifiers `hh h l ll L z j t`. Arguments are converted to what the conversion
//! reads, as the device's `printf` does with its argument buffer.
//!
//! Formats and arguments are data: a width or precision beyond [`MAX_PRINTF_FIELD`] is clamped
//! to it, and the output stops at a NUL in the format, as C's does (the conversions after it
//! still take their arguments, so the argument count is checked against the whole string).

/// The largest width or precision a `printf` conversion prints with: larger ones, written in
/// the format or read from an argument (`%*d`), are clamped to it.
pub const MAX_PRINTF_FIELD: usize = 4096;

/// A parsed format string.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Format {
    pieces: Vec<Piece>,
}

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Text(String),
    Spec(Spec),
    /// A NUL: the output ends here.
    End,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    zero: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
    /// The width comes from an argument (`*`).
    width_arg: bool,
    /// The precision comes from an argument (`.*`).
    precision_arg: bool,
    /// `l`, `ll`, `z`, `j`, `t`: a 64-bit integer.
    long: bool,
    conversion: char,
}

/// One argument's value, as the kernel computed it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    /// A signed integer (or `bool`).
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A floating value (floats are promoted to double, as C varargs are).
    Float(f64),
    /// A pointer's bits.
    Pointer(u64),
    /// The bytes a `%s` argument points to.
    Str(String),
}

impl Format {
    /// Parses a C format string.
    pub(crate) fn parse(format: &str) -> Result<Format, String> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\0' && !pieces.contains(&Piece::End) {
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::End);
                continue;
            }
            if c != '%' {
                text.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                text.push('%');
                continue;
            }
            let mut spec = Spec::default();
            while let Some(&f) = chars.peek() {
                match f {
                    '-' => spec.left = true,
                    '+' => spec.plus = true,
                    ' ' => spec.space = true,
                    '0' => spec.zero = true,
                    '#' => spec.alt = true,
                    _ => break,
                }
                chars.next();
            }
            if chars.peek() == Some(&'*') {
                chars.next();
                spec.width_arg = true;
            } else {
                spec.width = digits(&mut chars).unwrap_or(0).min(MAX_PRINTF_FIELD);
            }
            if chars.peek() == Some(&'.') {
                chars.next();
                if chars.peek() == Some(&'*') {
                    chars.next();
                    spec.precision_arg = true;
                } else {
                    spec.precision = Some(digits(&mut chars).unwrap_or(0).min(MAX_PRINTF_FIELD));
                }
            }
            while let Some(&m) = chars.peek() {
                match m {
                    'h' | 'L' => {}
                    'l' | 'z' | 'j' | 't' => spec.long = true,
                    _ => break,
                }
                chars.next();
            }
            let conversion = chars.next().ok_or("a printf format ending in `%`")?;
            if !"diuxXocspfFeEgGaA".contains(conversion) {
                return Err(format!("the printf conversion `%{conversion}`"));
            }
            spec.conversion = conversion;
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Spec(spec));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Format { pieces })
    }

    /// What each argument is read as, in order: a conversion character, or `*` for a width or
    /// precision.
    fn reads(&self) -> impl Iterator<Item = char> + '_ {
        self.pieces.iter().flat_map(|p| match p {
            Piece::Spec(s) => {
                let mut v = Vec::with_capacity(3);
                if s.width_arg {
                    v.push('*');
                }
                if s.precision_arg {
                    v.push('*');
                }
                v.push(s.conversion);
                v
            }
            Piece::Text(_) | Piece::End => Vec::new(),
        })
    }

    /// Number of arguments the format reads.
    pub(crate) fn arg_count(&self) -> usize {
        self.reads().count()
    }

    /// The conversion character of argument `index` (`*` for a width or precision).
    pub(crate) fn conversion(&self, index: usize) -> Option<char> {
        self.reads().nth(index)
    }

    /// Formats `args` (one per conversion, in order).
    pub(crate) fn render(&self, args: &[Arg]) -> String {
        let mut out = String::new();
        let mut args = args.iter();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::End => break,
                Piece::Spec(spec) => {
                    let mut spec = *spec;
                    if spec.width_arg {
                        // A negative `*` width means left justification, as in C.
                        let w = args.next().map_or(0, |a| a.as_i64() as i32);
                        spec.left |= w < 0;
                        spec.width = (w.unsigned_abs() as usize).min(MAX_PRINTF_FIELD);
                    }
                    if spec.precision_arg {
                        let p = args.next().map_or(0, |a| a.as_i64() as i32);
                        spec.precision = (p >= 0).then_some((p as usize).min(MAX_PRINTF_FIELD));
                    }
                    let arg = args.next().cloned().unwrap_or(Arg::Int(0));
                    spec.render(&arg, &mut out);
                }
            }
        }
        out
    }
}

fn digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<usize> {
    let mut n: Option<usize> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
        chars.next();
    }
    n
}

impl Arg {
    fn as_i64(&self) -> i64 {
        match *self {
            Arg::Int(i) => i,
            Arg::UInt(u) | Arg::Pointer(u) => u as i64,
            Arg::Float(f) => f as i64,
            Arg::Str(_) => 0,
        }
    }

    fn as_f64(&self) -> f64 {
        match *self {
            Arg::Int(i) => i as f64,
            Arg::UInt(u) | Arg::Pointer(u) => u as f64,
            Arg::Float(f) => f,
            Arg::Str(_) => 0.0,
        }
    }
}

impl Spec {
    fn render(&self, arg: &Arg, out: &mut String) {
        let (sign, body) = match self.conversion {
            'd' | 'i' => {
                let v = if self.long {
                    arg.as_i64()
                } else {
                    arg.as_i64() as i32 as i64
                };
                let sign = if v < 0 {
                    "-"
                } else if self.plus {
                    "+"
                } else if self.space {
                    " "
                } else {
                    ""
                };
                (
                    sign.to_string(),
                    self.integer_digits(v.unsigned_abs().to_string()),
                )
            }
            'u' | 'x' | 'X' | 'o' => {
                let raw = arg.as_i64() as u64;
                let v = if self.long { raw } else { raw as u32 as u64 };
                let s = match self.conversion {
                    'u' => v.to_string(),
                    'x' => format!("{v:x}"),
                    'X' => format!("{v:X}"),
                    _ => format!("{v:o}"),
                };
                let mut s = self.integer_digits(s);
                let prefix = match self.conversion {
                    'x' if self.alt && v != 0 => "0x",
                    'X' if self.alt && v != 0 => "0X",
                    'o' if self.alt && !s.starts_with('0') => "0",
                    _ => "",
                };
                s.insert_str(0, prefix);
                (String::new(), s)
            }
            'c' => (String::new(), ((arg.as_i64() as u8) as char).to_string()),
            's' => {
                let s = match arg {
                    Arg::Str(s) => s.clone(),
                    _ => "(null)".into(),
                };
                let s = match self.precision {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                };
                (String::new(), s)
            }
            'p' => {
                let v = arg.as_i64() as u64;
                (String::new(), format!("0x{v:x}"))
            }
            _ => {
                let v = arg.as_f64();
                let sign = if v.is_sign_negative() && !v.is_nan() {
                    "-"
                } else if self.plus {
                    "+"
                } else if self.space {
                    " "
                } else {
                    ""
                };
                (sign.to_string(), self.float_body(v.abs()))
            }
        };
        let len = sign.chars().count() + body.chars().count();
        let pad = self.width.saturating_sub(len);
        let numeric = !matches!(self.conversion, 'c' | 's' | 'p');
        let zero_pad = self.zero
            && !self.left
            && numeric
            && (self.precision.is_none() || "fFeEgG".contains(self.conversion))
            && body.starts_with(|c: char| c.is_ascii_digit());
        if self.left {
            out.push_str(&sign);
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if zero_pad {
            out.push_str(&sign);
            // Keep a `0x` prefix before the zeros.
            let (prefix, digits) = if body.starts_with("0x") || body.starts_with("0X") {
                body.split_at(2)
            } else {
                ("", body.as_str())
            };
            out.push_str(prefix);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(digits);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&sign);
            out.push_str(&body);
        }
    }

    /// Applies an integer precision (minimum digits; `.0` with 0 prints nothing).
    fn integer_digits(&self, s: String) -> String {
        match self.precision {
            Some(0) if s == "0" => String::new(),
            Some(p) if s.len() < p => format!("{}{s}", "0".repeat(p - s.len())),
            _ => s,
        }
    }

    fn float_body(&self, v: f64) -> String {
        let upper = self.conversion.is_ascii_uppercase();
        if !v.is_finite() {
            let s = if v.is_nan() { "nan" } else { "inf" };
            return if upper { s.to_uppercase() } else { s.into() };
        }
        if self.conversion.eq_ignore_ascii_case(&'a') {
            let s = hex_float(v, self.precision, self.alt);
            return if upper { s.to_uppercase() } else { s };
        }
        let p = self.precision.unwrap_or(6);
        let s = match self.conversion.to_ascii_lowercase() {
            'f' => {
                let mut s = format!("{v:.p$}");
                if self.alt && p == 0 {
                    s.push('.');
                }
                s
            }
            'e' => exponent_form(v, p, self.alt),
            _ => {
                let p = p.max(1);
                let exp = decimal_exponent(v, p - 1);
                let mut s = if exp < -4 || exp >= p as i32 {
                    exponent_form(v, p - 1, self.alt)
                } else {
                    format!("{v:.*}", (p as i32 - 1 - exp) as usize)
                };
                if !self.alt {
                    s = strip_fraction_zeros(&s);
                }
                s
            }
        };
        if upper { s.to_uppercase() } else { s }
    }
}

/// `%a`: `0x1.8p+0`; without a precision, the shortest exact form.
fn hex_float(v: f64, precision: Option<usize>, alt: bool) -> String {
    if v == 0.0 {
        let digits = precision.map_or(String::new(), |p| "0".repeat(p));
        let point = if !digits.is_empty() || alt { "." } else { "" };
        return format!("0x0{point}{digits}p+0");
    }
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let (mut lead, mut mantissa, exp) = if biased == 0 {
        (0u64, bits & ((1 << 52) - 1), -1022)
    } else {
        (1u64, bits & ((1 << 52) - 1), biased - 1023)
    };
    let digits = match precision {
        Some(p) if p < 13 => {
            // Round the 52-bit fraction to 4·p bits, ties to even.
            let drop = 4 * (13 - p) as u32;
            let keep = mantissa >> drop;
            let rest = mantissa & ((1 << drop) - 1);
            let half = 1 << (drop - 1);
            let mut rounded = keep + u64::from(rest > half || (rest == half && keep & 1 == 1));
            if rounded >> (4 * p) != 0 {
                lead += 1;
                rounded &= (1 << (4 * p)) - 1;
            }
            mantissa = rounded;
            if p == 0 {
                String::new()
            } else {
                format!("{mantissa:0width$x}", width = p)
            }
        }
        Some(p) => format!("{mantissa:013x}{}", "0".repeat(p - 13)),
        None => format!("{mantissa:013x}").trim_end_matches('0').to_string(),
    };
    let point = if !digits.is_empty() || alt { "." } else { "" };
    format!(
        "0x{lead}{point}{digits}p{}{}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    )
}

/// The decimal exponent `v` has when printed with `precision` fraction digits in `%e` form.
fn decimal_exponent(v: f64, precision: usize) -> i32 {
    let s = format!("{v:.precision$e}");
    s.rsplit('e')
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0)
}

/// `%e`: `d.ddde+XX`.
fn exponent_form(v: f64, precision: usize, alt: bool) -> String {
    let s = format!("{v:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let point = if alt && precision == 0 { "." } else { "" };
    format!(
        "{mantissa}{point}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    )
}

/// `%g` without `#`: trailing zeros of the fraction, and a bare point, go.
fn strip_fraction_zeros(s: &str) -> String {
    let (mantissa, exp) = match s.find('e') {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    format!("{mantissa}{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(f: &str, args: &[Arg]) -> String {
        Format::parse(f).unwrap().render(args)
    }

    #[test]
    fn integers() {
        assert_eq!(fmt("chorus %d", &[Arg::Int(1)]), "chorus 1");
        assert_eq!(
            fmt(
                "%5d|%-5d|%05d",
                &[Arg::Int(-42), Arg::Int(42), Arg::Int(-42)]
            ),
            "  -42|42   |-0042"
        );
        assert_eq!(
            fmt("%+d % d %.3d", &[Arg::Int(5), Arg::Int(5), Arg::Int(5)]),
            "+5  5 005"
        );
        assert_eq!(
            fmt(
                "%u %x %X %#x %o %#o",
                &[
                    Arg::Int(-1),
                    Arg::UInt(255),
                    Arg::UInt(255),
                    Arg::UInt(255),
                    Arg::UInt(8),
                    Arg::UInt(8)
                ]
            ),
            "4294967295 ff FF 0xff 10 010"
        );
        assert_eq!(
            fmt(
                "%ld %lld %llu",
                &[Arg::Int(-5_000_000_000), Arg::Int(1 << 40), Arg::Int(-1)]
            ),
            "-5000000000 1099511627776 18446744073709551615"
        );
        assert_eq!(fmt("%i%%%c", &[Arg::Int(7), Arg::Int(65)]), "7%A");
        assert_eq!(fmt("%#010x", &[Arg::UInt(255)]), "0x000000ff");
    }

    #[test]
    fn floats() {
        assert_eq!(fmt("%f", &[Arg::Float(1.5)]), "1.500000");
        assert_eq!(
            fmt(
                "%.2f|%8.3f|%-8.1f|",
                &[Arg::Float(1.23456), Arg::Float(-2.5), Arg::Float(2.25)]
            ),
            "1.23|  -2.500|2.2     |"
        );
        assert_eq!(
            fmt("%e %E", &[Arg::Float(12345.678), Arg::Float(0.00012)]),
            "1.234568e+04 1.200000E-04"
        );
        assert_eq!(
            fmt(
                "%g %g %g %g",
                &[
                    Arg::Float(100000.0),
                    Arg::Float(1e6),
                    Arg::Float(0.0001),
                    Arg::Float(1.5e-5)
                ]
            ),
            "100000 1e+06 0.0001 1.5e-05"
        );
        assert_eq!(
            fmt(
                "%g %.3g %#g",
                &[Arg::Float(3.0), Arg::Float(1.23456), Arg::Float(3.0)]
            ),
            "3 1.23 3.00000"
        );
        assert_eq!(
            fmt(
                "%f %F %+.1f",
                &[
                    Arg::Float(f64::INFINITY),
                    Arg::Float(f64::NAN),
                    Arg::Float(0.25)
                ]
            ),
            "inf NAN +0.2"
        );
        assert_eq!(fmt("%08.2f", &[Arg::Float(-3.5)]), "-0003.50");
    }

    #[test]
    fn strings_pointers_and_errors() {
        assert_eq!(
            fmt(
                "[%s|%.2s|%5s]",
                &[
                    Arg::Str("abc".into()),
                    Arg::Str("abc".into()),
                    Arg::Str("ab".into())
                ]
            ),
            "[abc|ab|   ab]"
        );
        assert_eq!(fmt("%p", &[Arg::Pointer(0x1000)]), "0x1000");
        assert!(Format::parse("%q").is_err());
        assert_eq!(
            fmt(
                "[%*d|%-*d|%.*f]",
                &[
                    Arg::Int(4),
                    Arg::Int(7),
                    Arg::Int(3),
                    Arg::Int(7),
                    Arg::Int(2),
                    Arg::Float(1.0)
                ]
            ),
            "[   7|7  |1.00]"
        );
        assert_eq!(Format::parse("%*.*f").unwrap().arg_count(), 3);
        assert_eq!(
            fmt(
                "%a %a %A %.1a %a",
                &[
                    Arg::Float(1.5),
                    Arg::Float(-0.25),
                    Arg::Float(10.0),
                    Arg::Float(1.96875),
                    Arg::Float(0.0)
                ]
            ),
            "0x1.8p+0 -0x1p-2 0X1.4P+3 0x2.0p+0 0x0p+0"
        );
        assert!(Format::parse("50%").is_err());
        assert_eq!(Format::parse("a %d b %s").unwrap().arg_count(), 2);
    }
}
