//! The macro-time functions ([`BUILTINS`]): their arities and their evaluation.

use super::*;

/// Every function the macro-time Lisp knows, besides the special forms.
pub const BUILTINS: &[&str] = &[
    // lists
    "list",
    "list*",
    "cons",
    "car",
    "cdr",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "rest",
    "cadr",
    "cddr",
    "caddr",
    "last",
    "butlast",
    "nth",
    "nthcdr",
    "append",
    "reverse",
    "length",
    "mapcar",
    "mapcan",
    "remove-if",
    "remove-if-not",
    "member",
    "assoc",
    "every",
    "some",
    "funcall",
    "apply",
    "identity",
    "nreverse",
    "copy-list",
    "endp",
    "remove",
    "find",
    "position",
    "count",
    "reduce",
    "subseq",
    "values",
    "mapc",
    // predicates
    "numberp",
    "integerp",
    "floatp",
    "symbolp",
    "keywordp",
    "stringp",
    "listp",
    "consp",
    "atom",
    "null",
    "not",
    "functionp",
    "eq",
    "eql",
    "equal",
    // numbers
    "+",
    "-",
    "*",
    "/",
    "mod",
    "rem",
    "1+",
    "1-",
    "min",
    "max",
    "abs",
    "floor",
    "ceiling",
    "truncate",
    "round",
    "expt",
    "sqrt",
    "float",
    "=",
    "/=",
    "<",
    ">",
    "<=",
    ">=",
    "zerop",
    "plusp",
    "minusp",
    "evenp",
    "oddp",
    // strings and symbols
    "format",
    "intern",
    "make-symbol",
    "symbol-name",
    "string",
    "string-upcase",
    "string-downcase",
    "concatenate",
    "string=",
    "string-equal",
    "symbolicate",
    "princ-to-string",
    "gensym",
    "error",
];

/// How many arguments a built-in takes: at least the first, at most the second.
fn builtin_arity(name: &str) -> (usize, Option<usize>) {
    match name {
        "list" | "append" | "+" | "*" | "symbolicate" => (0, None),
        "gensym" => (0, Some(1)),
        "list*" | "-" | "/" | "min" | "max" | "=" | "/=" | "<" | ">" | "<=" | ">=" | "funcall"
        | "concatenate" | "error" => (1, None),
        "last" | "butlast" | "intern" | "float" | "floor" | "ceiling" | "truncate" | "round" => {
            (1, Some(2))
        }
        "cons" | "nth" | "nthcdr" | "member" | "assoc" | "remove-if" | "remove-if-not"
        | "every" | "some" | "eq" | "eql" | "equal" | "mod" | "rem" | "expt" | "string="
        | "string-equal" => (2, Some(2)),
        "mapcar" | "mapcan" | "mapc" | "apply" | "format" => (2, None),
        "values" => (0, None),
        "remove" | "find" | "position" | "count" => (2, Some(2)),
        "reduce" => (2, Some(4)),
        "subseq" => (2, Some(3)),
        _ => (1, Some(1)),
    }
}

impl<'a, 'c> Interp<'a, 'c> {
    pub(super) fn list_arg<'v>(&self, value: &'v Value, span: &Span) -> Result<&'v [Form]> {
        value
            .as_list()
            .ok_or_else(|| self.error(span, format!("expected a list, got `{value}`")))
    }

    pub(super) fn string_designator(&self, value: &Value, span: &Span) -> Result<String> {
        match value.as_form().map(|f| &f.kind) {
            Some(FormKind::Str(s)) => Ok(s.clone()),
            Some(FormKind::Symbol(s)) => Ok(s.clone()),
            _ => Err(self.error(
                span,
                format!("expected a string or a symbol, got `{value}`"),
            )),
        }
    }

    pub(super) fn expect_count(
        &self,
        name: &str,
        args: &[Value],
        min: usize,
        max: Option<usize>,
        span: &Span,
    ) -> Result<()> {
        if args.len() < min || max.is_some_and(|m| args.len() > m) {
            let expected = match max {
                Some(m) if m == min => format!("{min}"),
                Some(m) => format!("{min} to {m}"),
                None => format!("at least {min}"),
            };
            return Err(self.error(
                span,
                format!("`{name}` takes {expected} argument(s), got {}", args.len()),
            ));
        }
        Ok(())
    }

    pub(super) fn call_builtin(
        &mut self,
        name: &str,
        args: Vec<Value>,
        span: &Span,
    ) -> Result<Value> {
        let (min, max) = builtin_arity(name);
        self.expect_count(name, &args, min, max, span)?;
        match name {
            // --- lists -------------------------------------------------------------------------
            "list" => self.list_value(&args, span),
            "list*" => {
                let (last, init) = args
                    .split_last()
                    .map(|(l, i)| (l.clone(), i.to_vec()))
                    .unwrap_or_else(|| (Value::nil(span), vec![]));
                let tail = self.list_arg(&last, span)?.to_vec();
                let mut items = self.forms(&init, span)?;
                items.extend(tail);
                Ok(self.list(items))
            }
            "cons" => {
                let Some(tail) = args[1].as_list() else {
                    return Err(self.error(span, format!("(cons x `{}`): the second argument must be a list, dotted pairs are not supported", args[1])));
                };
                let mut items = self.forms(&args[..1], span)?;
                items.extend(tail.iter().cloned());
                Ok(self.list(items))
            }
            "car" | "first" | "second" | "third" | "fourth" | "fifth" | "cadr" | "caddr" => {
                let index = match name {
                    "car" | "first" => 0,
                    "second" | "cadr" => 1,
                    "third" | "caddr" => 2,
                    "fourth" => 3,
                    _ => 4,
                };
                let items = self.list_arg(&args[0], span)?;
                let item = items.get(index).cloned();
                item.as_ref().inspect(|item| self.charge_nodes(item));
                Ok(item.map(Value::Data).unwrap_or_else(|| Value::nil(span)))
            }
            "cdr" | "rest" | "cddr" => {
                let skip = if name == "cddr" { 2 } else { 1 };
                let items = self.list_arg(&args[0], span)?;
                Ok(self.list(items.iter().skip(skip).cloned().collect()))
            }
            "nth" | "nthcdr" => {
                let index = self.int_arg(&args[0], span)?;
                let items = self.list_arg(&args[1], span)?;
                let index = usize::try_from(index).map_err(|_| {
                    self.error(span, format!("`{name}` needs a non-negative index"))
                })?;
                Ok(if name == "nth" {
                    items
                        .get(index)
                        .cloned()
                        .map(Value::Data)
                        .unwrap_or_else(|| Value::nil(span))
                } else {
                    self.list(items.iter().skip(index).cloned().collect())
                })
            }
            "last" => {
                let items = self.list_arg(&args[0], span)?;
                let count = match args.get(1) {
                    Some(c) => usize::try_from(self.int_arg(c, span)?).unwrap_or(0),
                    None => 1,
                };
                Ok(self.list(items[items.len().saturating_sub(count)..].to_vec()))
            }
            "butlast" => {
                let items = self.list_arg(&args[0], span)?;
                let count = match args.get(1) {
                    Some(c) => usize::try_from(self.int_arg(c, span)?).unwrap_or(0),
                    None => 1,
                };
                Ok(self.list(items[..items.len().saturating_sub(count)].to_vec()))
            }
            "append" => {
                let mut items = Vec::new();
                for arg in &args {
                    items.extend(self.list_arg(arg, span)?.iter().cloned());
                }
                Ok(self.list(items))
            }
            "reverse" | "nreverse" => {
                if let Some(FormKind::Str(s)) = args[0].as_form().map(|f| &f.kind) {
                    return Ok(self.data(FormKind::Str(s.chars().rev().collect())));
                }
                Ok(self.list(
                    self.list_arg(&args[0], span)?
                        .iter()
                        .rev()
                        .cloned()
                        .collect(),
                ))
            }
            "length" => {
                let len = match args[0].as_form().map(|f| &f.kind) {
                    Some(FormKind::Str(s)) => s.chars().count(),
                    _ => self.list_arg(&args[0], span)?.len(),
                };
                Ok(self.data(FormKind::Int {
                    value: len as i128,
                    suffix: IntSuffix::None,
                }))
            }
            "member" => {
                let item = args[0].as_form().cloned();
                let items = self.list_arg(&args[1], span)?;
                Ok(
                    match items
                        .iter()
                        .position(|x| item.as_ref().is_some_and(|i| eql(i, x)))
                    {
                        Some(i) => self.list(items[i..].to_vec()),
                        None => Value::nil(span),
                    },
                )
            }
            "assoc" => {
                let item = args[0].as_form().cloned();
                let items = self.list_arg(&args[1], span)?;
                let found = items.iter().find(|entry| {
                    entry
                        .as_list()
                        .and_then(|e| e.first())
                        .is_some_and(|k| item.as_ref().is_some_and(|i| eql(i, k)))
                });
                Ok(found
                    .cloned()
                    .map(Value::Data)
                    .unwrap_or_else(|| Value::nil(span)))
            }
            "mapcar" | "mapcan" => {
                let lists: Vec<Vec<Form>> = args[1..]
                    .iter()
                    .map(|l| self.list_arg(l, span).map(<[Form]>::to_vec))
                    .collect::<Result<_>>()?;
                let count = lists.iter().map(Vec::len).min().unwrap_or(0);
                let mut out = Vec::new();
                for i in 0..count {
                    let call_args = lists.iter().map(|l| Value::Data(l[i].clone())).collect();
                    let value = self.apply(&args[0], call_args, span)?;
                    if name == "mapcar" {
                        out.push(self.forms(std::slice::from_ref(&value), span)?.remove(0));
                    } else {
                        out.extend(self.list_arg(&value, span)?.iter().cloned());
                    }
                }
                Ok(self.list(out))
            }
            "remove-if" | "remove-if-not" => {
                let items = self.list_arg(&args[1], span)?.to_vec();
                let mut out = Vec::new();
                for item in items {
                    let test = !self
                        .apply(&args[0], vec![Value::Data(item.clone())], span)?
                        .is_nil();
                    if test != (name == "remove-if") {
                        out.push(item);
                    }
                }
                Ok(self.list(out))
            }
            "every" | "some" => {
                let items = self.list_arg(&args[1], span)?.to_vec();
                for item in items {
                    let value = self.apply(&args[0], vec![Value::Data(item)], span)?;
                    if name == "every" && value.is_nil() {
                        return Ok(value);
                    }
                    if name == "some" && !value.is_nil() {
                        return Ok(value);
                    }
                }
                Ok(self.boolean(name == "every"))
            }
            "funcall" => {
                let mut args = args;
                let function = args.remove(0);
                self.apply(&function, args, span)
            }
            "apply" => {
                let mut args = args;
                let function = args.remove(0);
                let last = args.pop().unwrap_or_else(|| Value::nil(span));
                args.extend(self.list_arg(&last, span)?.iter().cloned().map(Value::Data));
                self.apply(&function, args, span)
            }
            "identity" => Ok(args[0].clone()),
            "values" => Ok(args.first().cloned().unwrap_or_else(|| Value::nil(span))),
            "copy-list" => Ok(self.list(self.list_arg(&args[0], span)?.to_vec())),
            "endp" => Ok(self.boolean(self.list_arg(&args[0], span)?.is_empty())),
            "remove" | "find" | "position" | "count" => {
                let item = args[0].as_form().cloned();
                let items = self.list_arg(&args[1], span)?;
                let matches = |x: &Form| item.as_ref().is_some_and(|i| eql(i, x));
                Ok(match name {
                    "remove" => self.list(items.iter().filter(|x| !matches(x)).cloned().collect()),
                    "find" => items
                        .iter()
                        .find(|x| matches(x))
                        .cloned()
                        .map_or_else(|| Value::nil(span), Value::Data),
                    "position" => match items.iter().position(matches) {
                        Some(i) => self.data(FormKind::Int {
                            value: i as i128,
                            suffix: IntSuffix::None,
                        }),
                        None => Value::nil(span),
                    },
                    _ => self.data(FormKind::Int {
                        value: items.iter().filter(|x| matches(x)).count() as i128,
                        suffix: IntSuffix::None,
                    }),
                })
            }
            "reduce" => {
                // (reduce f list [:initial-value v])
                let initial = match &args[2..] {
                    [] => None,
                    [key, value] if key.is_symbol(":initial-value") => Some(value.clone()),
                    _ => {
                        return Err(self.error(
                            span,
                            "reduce takes a function, a list and optionally :initial-value v",
                        ));
                    }
                };
                let items = self.list_arg(&args[1], span)?.to_vec();
                let mut items = items.into_iter().map(Value::Data);
                let Some(mut acc) = initial.or_else(|| items.next()) else {
                    return self.apply(&args[0], Vec::new(), span);
                };
                for item in items {
                    acc = self.apply(&args[0], vec![acc, item], span)?;
                }
                Ok(acc)
            }
            "subseq" => {
                let start = self.int_arg(&args[1], span)?;
                let end = match args.get(2) {
                    Some(end) if !end.is_nil() => Some(self.int_arg(end, span)?),
                    _ => None,
                };
                let bounds = |len: usize| {
                    let end = end.unwrap_or(len as i128);
                    if 0 <= start && start <= end && end <= len as i128 {
                        Ok((start as usize, end as usize))
                    } else {
                        Err(self.error(
                            span,
                            format!("subseq: the bounds {start} to {end} are outside 0 to {len}"),
                        ))
                    }
                };
                if let Some(FormKind::Str(text)) = args[0].as_form().map(|f| &f.kind) {
                    let chars: Vec<char> = text.chars().collect();
                    let (from, to) = bounds(chars.len())?;
                    return Ok(self.data(FormKind::Str(chars[from..to].iter().collect())));
                }
                let items = self.list_arg(&args[0], span)?;
                let (from, to) = bounds(items.len())?;
                Ok(self.list(items[from..to].to_vec()))
            }
            "mapc" => {
                let lists: Vec<Vec<Form>> = args[1..]
                    .iter()
                    .map(|l| self.list_arg(l, span).map(<[Form]>::to_vec))
                    .collect::<Result<_>>()?;
                let count = lists.iter().map(Vec::len).min().unwrap_or(0);
                for i in 0..count {
                    let call_args = lists.iter().map(|l| Value::Data(l[i].clone())).collect();
                    self.apply(&args[0], call_args, span)?;
                }
                Ok(args[1].clone())
            }
            // --- predicates ----------------------------------------------------------------------
            "numberp" | "integerp" | "floatp" | "symbolp" | "keywordp" | "stringp" | "listp"
            | "consp" | "atom" | "null" | "not" | "functionp" => {
                let v = &args[0];
                let kind = v.as_form().map(|f| &f.kind);
                let result = match name {
                    "numberp" => {
                        matches!(kind, Some(FormKind::Int { .. } | FormKind::Float { .. }))
                    }
                    "integerp" => matches!(kind, Some(FormKind::Int { .. })),
                    "floatp" => matches!(kind, Some(FormKind::Float { .. })),
                    "symbolp" => matches!(kind, Some(FormKind::Symbol(_))) || v.is_nil(),
                    "keywordp" => v.as_symbol().is_some_and(|s| s.starts_with(':')),
                    "stringp" => matches!(kind, Some(FormKind::Str(_))),
                    "listp" => v.as_list().is_some(),
                    "consp" => v.as_list().is_some_and(|l| !l.is_empty()),
                    "atom" => v.as_list().is_none_or(<[Form]>::is_empty),
                    "null" | "not" => v.is_nil(),
                    _ => matches!(v, Value::Function(_)),
                };
                Ok(self.boolean(result))
            }
            "eq" | "eql" | "equal" => {
                let result = match (args[0].as_form(), args[1].as_form()) {
                    (Some(a), Some(b)) => eql(a, b),
                    _ => false,
                };
                Ok(self.boolean(result))
            }
            // --- numbers ---------------------------------------------------------------------------
            "+" | "*" => {
                let mut acc = Num::Int(i128::from(name == "*"), IntSuffix::None);
                for arg in &args {
                    let x = self.num_arg(arg, span)?;
                    acc = self.arith(name, acc, x, span)?;
                }
                self.num_value(acc, span)
            }
            "-" | "/" => {
                let first = self.num_arg(&args[0], span)?;
                let acc = if args.len() == 1 {
                    let identity = Num::Int(i128::from(name == "/"), IntSuffix::None);
                    self.arith(name, identity, first, span)?
                } else {
                    let mut acc = first;
                    for arg in &args[1..] {
                        let x = self.num_arg(arg, span)?;
                        acc = self.arith(name, acc, x, span)?;
                    }
                    acc
                };
                self.num_value(acc, span)
            }
            "1+" | "1-" => {
                let x = self.num_arg(&args[0], span)?;
                let one = Num::Int(1, IntSuffix::None);
                let r = self.arith(if name == "1+" { "+" } else { "-" }, x, one, span)?;
                self.num_value(r, span)
            }
            "mod" | "rem" => {
                let (a, b) = (self.num_arg(&args[0], span)?, self.num_arg(&args[1], span)?);
                let mode = if name == "mod" {
                    Rounding::Floor
                } else {
                    Rounding::Truncate
                };
                let q = self.round_div(mode, a, b, span)?;
                let q = self.num_arg(&q, span)?;
                let product = self.arith("*", q, b, span)?;
                let r = self.arith("-", a, product, span)?;
                self.num_value(r, span)
            }
            "floor" | "ceiling" | "truncate" | "round" => {
                let a = self.num_arg(&args[0], span)?;
                let b = match args.get(1) {
                    Some(b) => self.num_arg(b, span)?,
                    None => Num::Int(1, IntSuffix::None),
                };
                let mode = match name {
                    "floor" => Rounding::Floor,
                    "ceiling" => Rounding::Ceiling,
                    "truncate" => Rounding::Truncate,
                    _ => Rounding::Round,
                };
                self.round_div(mode, a, b, span)
            }
            "min" | "max" => {
                let mut best = args[0].clone();
                let mut best_num = self.num_arg(&best, span)?;
                for arg in &args[1..] {
                    let x = self.num_arg(arg, span)?;
                    if self.compare(if name == "min" { "<" } else { ">" }, x, best_num) {
                        best = arg.clone();
                        best_num = x;
                    }
                }
                Ok(best)
            }
            "abs" => {
                let r = match self.num_arg(&args[0], span)? {
                    Num::Int(v, s) => Num::Int(v.abs(), s),
                    Num::Float(v, p) => Num::Float(v.abs(), p),
                };
                self.num_value(r, span)
            }
            "expt" => {
                let (base, power) = (self.num_arg(&args[0], span)?, self.num_arg(&args[1], span)?);
                let r = match (base, power) {
                    (Num::Int(b, s), Num::Int(p, _)) if p >= 0 => {
                        let p = u32::try_from(p).map_err(|_| {
                            self.error(span, "integer overflow: the result does not fit in 64 bits")
                        })?;
                        Num::Int(
                            b.checked_pow(p).ok_or_else(|| {
                                self.error(
                                    span,
                                    "integer overflow: the result does not fit in 64 bits",
                                )
                            })?,
                            s,
                        )
                    }
                    (Num::Int(b, _), Num::Int(..)) if b.abs() != 1 => {
                        return Err(self.error(
                            span,
                            "(expt integer negative-integer) would be a ratio; use a float base",
                        ));
                    }
                    (Num::Int(b, s), Num::Int(p, _)) => {
                        Num::Int(if b == 1 || p % 2 == 0 { 1 } else { -1 }, s)
                    }
                    _ => Num::Float(
                        base.as_f64().powf(power.as_f64()),
                        float_precision(base, power),
                    ),
                };
                self.num_value(r, span)
            }
            "sqrt" => {
                let x = self.num_arg(&args[0], span)?;
                if x.as_f64() < 0.0 {
                    return Err(self.error(
                        span,
                        "sqrt of a negative number (complex numbers are not supported)",
                    ));
                }
                let precision = float_precision(x, x);
                self.num_value(Num::Float(x.as_f64().sqrt(), precision), span)
            }
            "float" => {
                let x = self.num_arg(&args[0], span)?;
                let precision = match args.get(1) {
                    Some(proto) => match self.num_arg(proto, span)? {
                        Num::Float(_, p) => p,
                        Num::Int(..) => {
                            return Err(
                                self.error(span, "the prototype of `float` must be a float")
                            );
                        }
                    },
                    None => match x {
                        Num::Float(_, p) => p,
                        Num::Int(..) => FloatPrecision::Single,
                    },
                };
                self.num_value(Num::Float(x.as_f64(), precision), span)
            }
            "=" | "/=" | "<" | ">" | "<=" | ">=" => {
                let nums = args
                    .iter()
                    .map(|a| self.num_arg(a, span))
                    .collect::<Result<Vec<_>>>()?;
                let result = if name == "/=" {
                    nums.iter()
                        .enumerate()
                        .all(|(i, a)| nums[i + 1..].iter().all(|b| self.compare("/=", *a, *b)))
                } else {
                    nums.windows(2).all(|w| self.compare(name, w[0], w[1]))
                };
                Ok(self.boolean(result))
            }
            "zerop" | "plusp" | "minusp" => {
                let x = self.num_arg(&args[0], span)?.as_f64();
                Ok(self.boolean(match name {
                    "zerop" => x == 0.0,
                    "plusp" => x > 0.0,
                    _ => x < 0.0,
                }))
            }
            "evenp" | "oddp" => {
                let x = self.int_arg(&args[0], span)?;
                Ok(self.boolean((x % 2 == 0) == (name == "evenp")))
            }
            // --- strings and symbols -----------------------------------------------------------------
            "format" => {
                if !args[0].is_nil() {
                    return Err(self.error(
                        span,
                        "only (format nil …) is supported: macro code cannot print",
                    ));
                }
                let control = self.string_arg(&args[1], span)?;
                Ok(self.data(FormKind::Str(self.format(&control, &args[2..], span)?)))
            }
            // (princ-to-string x) is (format nil "~a" x): CL-Cuda's examples name kernels with it.
            "princ-to-string" => Ok(self.data(FormKind::Str(self.format("~a", &args, span)?))),
            "intern" => {
                let name = self.string_arg(&args[0], span)?;
                let folded: String = name.chars().flat_map(char::to_lowercase).collect();
                self.new_symbol(&folded, span)
            }
            "symbolicate" => {
                let mut name = String::new();
                for arg in &args {
                    name.push_str(&self.string_designator(arg, span)?);
                }
                let folded: String = name.chars().flat_map(char::to_lowercase).collect();
                self.new_symbol(&folded, span)
            }
            "make-symbol" => {
                let name = self.string_arg(&args[0], span)?;
                Ok(Value::Data(self.cx.gensym(&name)))
            }
            "gensym" => {
                let prefix = match args.first() {
                    Some(p) => self.string_designator(p, span)?,
                    None => "g".to_string(),
                };
                Ok(Value::Data(self.cx.gensym(&prefix)))
            }
            "symbol-name" => {
                let Some(name) = args[0].as_symbol().or(args[0].is_nil().then_some("nil")) else {
                    return Err(self.error(span, format!("expected a symbol, got `{}`", args[0])));
                };
                Ok(self.data(FormKind::Str(name.to_string())))
            }
            "string" => {
                let s = self.string_designator(&args[0], span)?;
                Ok(self.data(FormKind::Str(s)))
            }
            "string-upcase" | "string-downcase" => {
                let s = self.string_designator(&args[0], span)?;
                Ok(self.data(FormKind::Str(if name == "string-upcase" {
                    s.to_uppercase()
                } else {
                    s.to_lowercase()
                })))
            }
            "string=" | "string-equal" => {
                let (a, b) = (
                    self.string_designator(&args[0], span)?,
                    self.string_designator(&args[1], span)?,
                );
                Ok(self.boolean(if name == "string=" {
                    a == b
                } else {
                    a.to_lowercase() == b.to_lowercase()
                }))
            }
            "concatenate" => {
                let result_type = args[0].as_symbol();
                match result_type {
                    Some("string") => {
                        let mut s = String::new();
                        for arg in &args[1..] {
                            s.push_str(&self.string_arg(arg, span)?);
                        }
                        Ok(self.data(FormKind::Str(s)))
                    }
                    Some("list") => self.call_builtin("append", args[1..].to_vec(), span),
                    _ => Err(self.error(
                        span,
                        "concatenate supports the result types 'string and 'list",
                    )),
                }
            }
            "error" => {
                let control = self.string_arg(&args[0], span)?;
                let message = self.format(&control, &args[1..], span)?;
                Err(Error::new(
                    self.call_span(),
                    format!("macro `{}`: {message}", self.cx.name()),
                ))
            }
            _ => Err(self.error(span, format!("unknown macro-time function `{name}`"))),
        }
    }

    pub(super) fn new_symbol(&self, name: &str, span: &Span) -> Result<Value> {
        if name.starts_with(crate::reader::GENSYM_PREFIX) {
            return Err(self.error(
                span,
                format!("`{name}`: names starting with `#:` are reserved for gensyms"),
            ));
        }
        Ok(self.symbol(name))
    }

    pub(super) fn string_arg(&self, value: &Value, span: &Span) -> Result<String> {
        match value.as_form().map(|f| &f.kind) {
            Some(FormKind::Str(s)) => Ok(s.clone()),
            _ => Err(self.error(span, format!("expected a string, got `{value}`"))),
        }
    }

    /// The forms of `values`; a function among them is an error.
    pub(super) fn forms(&self, values: &[Value], span: &Span) -> Result<Vec<Form>> {
        values
            .iter()
            .map(|v| {
                v.as_form()
                    .cloned()
                    .ok_or_else(|| self.error(span, "a function cannot be stored in a list"))
            })
            .collect()
    }

    pub(super) fn list_value(&self, values: &[Value], span: &Span) -> Result<Value> {
        Ok(self.list(self.forms(values, span)?))
    }

    /// `format` with `~a`, `~s`, `~d`, `~%` and `~~`.
    pub(super) fn format(&self, control: &str, args: &[Value], span: &Span) -> Result<String> {
        let mut out = String::new();
        let mut args = args.iter();
        let mut chars = control.chars();
        while let Some(c) = chars.next() {
            if c != '~' {
                out.push(c);
                continue;
            }
            let directive = chars.next().map(|d| d.to_ascii_lowercase());
            match directive {
                Some('%') => out.push('\n'),
                Some('~') => out.push('~'),
                Some(d @ ('a' | 's' | 'd')) => {
                    let Some(arg) = args.next() else {
                        return Err(self.error(span, format!("format: no argument left for ~{d}")));
                    };
                    match (d, arg.as_form().map(|f| &f.kind)) {
                        ('a', Some(FormKind::Str(s))) => out.push_str(s),
                        ('d', Some(FormKind::Int { value, .. })) => {
                            out.push_str(&value.to_string())
                        }
                        _ => out.push_str(&arg.to_string()),
                    }
                }
                other => {
                    return Err(self.error(
                        span,
                        format!(
                            "format directive `~{}` is not supported; use ~a, ~s, ~d, ~% or ~~",
                            other.map(String::from).unwrap_or_default()
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }
}
