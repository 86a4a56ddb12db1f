//! The subset of `loop` the macro-time Lisp runs (documented at the top of the module).

use super::*;

impl<'a, 'c> Interp<'a, 'c> {
    /// The `loop` subset documented at the top of the module.
    pub(super) fn eval_loop(&mut self, form: &Form, args: &[Form], env: &Env) -> Result<Value> {
        enum Driver {
            In {
                var: String,
                items: Vec<Form>,
            },
            From {
                var: String,
                next: Num,
                end: Option<(Num, bool, bool)>,
                step: Num,
            },
            Repeat(i128),
        }
        enum Action<'f> {
            Collect(&'f Form),
            Append(&'f Form),
            Sum(&'f Form),
            Do(&'f [Form]),
        }
        let loop_keyword = |f: &Form, k: &str| f.is_symbol(k) || f.is_symbol(&format!(":{k}"));
        let is_clause_keyword = |f: &Form| {
            [
                "for", "repeat", "collect", "append", "sum", "do", "when", "unless",
            ]
            .iter()
            .any(|k| loop_keyword(f, k))
        };
        let mut drivers = Vec::new();
        let mut actions: Vec<(Option<(bool, &Form)>, Action)> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let clause = &args[i];
            i += 1;
            if loop_keyword(clause, "for") {
                let var = self
                    .variable(self.loop_operand(args, i, "a variable", &form.span)?)?
                    .to_string();
                let how = self.loop_operand(args, i + 1, "`in` or `from`", &form.span)?;
                i += 2;
                if loop_keyword(how, "in") {
                    let list = self.eval(self.loop_operand(args, i, "a list", &form.span)?, env)?;
                    i += 1;
                    drivers.push(Driver::In {
                        var,
                        items: self.list_arg(&list, &form.span)?.to_vec(),
                    });
                } else if loop_keyword(how, "from") {
                    let start =
                        self.eval(self.loop_operand(args, i, "a number", &form.span)?, env)?;
                    let start = self.num_arg(&start, &args[i].span)?;
                    i += 1;
                    let mut end = None;
                    let mut step = Num::Int(1, IntSuffix::None);
                    while let Some(k) = args.get(i) {
                        let (inclusive, is_down) = if loop_keyword(k, "to")
                            || loop_keyword(k, "upto")
                        {
                            (true, false)
                        } else if loop_keyword(k, "below") {
                            (false, false)
                        } else if loop_keyword(k, "downto") {
                            (true, true)
                        } else if loop_keyword(k, "by") {
                            let v = self
                                .eval(self.loop_operand(args, i + 1, "a step", &form.span)?, env)?;
                            step = self.num_arg(&v, &k.span)?;
                            i += 2;
                            continue;
                        } else {
                            break;
                        };
                        let v =
                            self.eval(self.loop_operand(args, i + 1, "a limit", &form.span)?, env)?;
                        end = Some((self.num_arg(&v, &k.span)?, inclusive, is_down));
                        i += 2;
                    }
                    drivers.push(Driver::From {
                        var,
                        next: start,
                        end,
                        step,
                    });
                } else {
                    return Err(self.error(
                        &how.span,
                        format!("loop: expected `in` or `from`, found `{how}`"),
                    ));
                }
            } else if loop_keyword(clause, "repeat") {
                let count = self.eval(self.loop_operand(args, i, "a count", &form.span)?, env)?;
                drivers.push(Driver::Repeat(self.int_arg(&count, &args[i].span)?));
                i += 1;
            } else {
                let mut condition = None;
                let mut keyword = clause;
                if loop_keyword(clause, "when") || loop_keyword(clause, "unless") {
                    condition = Some((
                        loop_keyword(clause, "when"),
                        self.loop_operand(args, i, "a test", &form.span)?,
                    ));
                    keyword = self.loop_operand(args, i + 1, "an action", &form.span)?;
                    i += 2;
                }
                let action = if loop_keyword(keyword, "do") {
                    let start = i;
                    while i < args.len() && !is_clause_keyword(&args[i]) {
                        i += 1;
                    }
                    Action::Do(&args[start..i])
                } else {
                    let operand = self.loop_operand(args, i, "a form", &form.span)?;
                    i += 1;
                    if loop_keyword(keyword, "collect") {
                        Action::Collect(operand)
                    } else if loop_keyword(keyword, "append") {
                        Action::Append(operand)
                    } else if loop_keyword(keyword, "sum") {
                        Action::Sum(operand)
                    } else {
                        return Err(self.error(
                            &keyword.span,
                            format!("loop: `{keyword}` is not supported; the clauses are for … in, for … from … to/below/downto … by, repeat, collect, append, sum, do, when, unless"),
                        ));
                    }
                };
                actions.push((condition, action));
            }
        }
        let mut collected: Vec<Form> = Vec::new();
        let mut sum: Option<Num> = None;
        let mut iteration = 0usize;
        loop {
            let mut inner = env.clone();
            for driver in &mut drivers {
                match driver {
                    Driver::In { var, items } => {
                        let Some(item) = items.get(iteration) else {
                            return self.loop_result(collected, sum);
                        };
                        inner.bind(var, Value::Data(item.clone()));
                    }
                    Driver::From {
                        var,
                        next,
                        end,
                        step,
                    } => {
                        if let Some((limit, inclusive, down)) = end {
                            let op = match (*down, *inclusive) {
                                (false, true) => ">",
                                (false, false) => ">=",
                                (true, true) => "<",
                                (true, false) => "<=",
                            };
                            if self.compare(op, *next, *limit) {
                                return self.loop_result(collected, sum);
                            }
                        }
                        inner.bind(var, self.num_value(*next, &form.span)?);
                        let op = if end.is_some_and(|(_, _, down)| down) {
                            "-"
                        } else {
                            "+"
                        };
                        *next = self.arith(op, *next, *step, &form.span)?;
                    }
                    Driver::Repeat(count) => {
                        if iteration as i128 >= *count {
                            return self.loop_result(collected, sum);
                        }
                    }
                }
            }
            iteration += 1;
            self.tick(&form.span)?;
            for (condition, action) in &actions {
                if let Some((when, test)) = condition
                    && self.eval(test, &inner)?.is_nil() == *when
                {
                    continue;
                }
                match action {
                    Action::Collect(f) => {
                        let v = self.eval(f, &inner)?;
                        collected.extend(self.forms(std::slice::from_ref(&v), &f.span)?);
                    }
                    Action::Append(f) => {
                        let v = self.eval(f, &inner)?;
                        collected.extend(self.list_arg(&v, &f.span)?.iter().cloned());
                    }
                    Action::Sum(f) => {
                        let v = self.eval(f, &inner)?;
                        let x = self.num_arg(&v, &f.span)?;
                        sum = Some(match sum {
                            Some(acc) => self.arith("+", acc, x, &f.span)?,
                            None => x,
                        });
                    }
                    Action::Do(body) => {
                        self.eval_body(body, &inner)?;
                    }
                }
            }
        }
    }

    pub(super) fn loop_operand<'f>(
        &self,
        args: &'f [Form],
        i: usize,
        what: &str,
        span: &Span,
    ) -> Result<&'f Form> {
        args.get(i)
            .ok_or_else(|| self.error(span, format!("loop: expected {what} at the end")))
    }

    pub(super) fn loop_result(&self, collected: Vec<Form>, sum: Option<Num>) -> Result<Value> {
        match sum {
            Some(n) => self.num_value(n, self.call_span()),
            None => Ok(self.list(collected)),
        }
    }
}
