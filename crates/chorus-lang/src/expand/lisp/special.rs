//! The special forms: everything evaluated by the interpreter itself rather than called.

use super::*;

impl<'a, 'c> Interp<'a, 'c> {
    pub(super) fn eval_special(
        &mut self,
        name: &str,
        form: &Form,
        args: &[Form],
        env: &Env,
    ) -> Result<Value> {
        match name {
            "quote" => {
                self.expect_args(form, args, 1, Some(1))?;
                self.charge_nodes(&args[0]);
                Ok(Value::Data(respan(&args[0], self.call_span())))
            }
            "quasiquote" => {
                self.expect_args(form, args, 1, Some(1))?;
                Ok(Value::Data(self.quasiquote(&args[0], 1, env)?))
            }
            "unquote" | "unquote-splicing" => Err(self.error(
                &form.span,
                format!(
                    "`{}` (a comma) outside of a backquote",
                    if name == "unquote" { "," } else { ",@" }
                ),
            )),
            "declare" => Err(self.error(
                &form.span,
                "`declare` is only allowed at the start of a body",
            )),
            "function" => {
                self.expect_args(form, args, 1, Some(1))?;
                self.function(&args[0], env)
            }
            "lambda" => {
                self.expect_args(form, args, 1, None)?;
                Ok(Value::Function(self.closure(
                    "lambda",
                    &args[0],
                    &args[1..],
                    env,
                )?))
            }
            "if" => {
                self.expect_args(form, args, 2, Some(3))?;
                if !self.eval(&args[0], env)?.is_nil() {
                    self.eval(&args[1], env)
                } else if let Some(else_form) = args.get(2) {
                    self.eval(else_form, env)
                } else {
                    Ok(Value::nil(self.call_span()))
                }
            }
            "when" | "unless" => {
                self.expect_args(form, args, 1, None)?;
                let test = !self.eval(&args[0], env)?.is_nil();
                if test == (name == "when") {
                    self.eval_body(&args[1..], env)
                } else {
                    Ok(Value::nil(self.call_span()))
                }
            }
            "cond" => {
                for clause in args {
                    let Some((test, body)) = clause.as_list().and_then(|c| c.split_first()) else {
                        return Err(self.error(
                            &clause.span,
                            format!("a cond clause must be (test form…), found `{clause}`"),
                        ));
                    };
                    let value = self.eval(test, env)?;
                    if !value.is_nil() {
                        return if body.is_empty() {
                            Ok(value)
                        } else {
                            self.eval_body(body, env)
                        };
                    }
                }
                Ok(Value::nil(self.call_span()))
            }
            "and" => {
                let mut value = self.boolean(true);
                for arg in args {
                    value = self.eval(arg, env)?;
                    if value.is_nil() {
                        break;
                    }
                }
                Ok(value)
            }
            "or" => {
                for arg in args {
                    let value = self.eval(arg, env)?;
                    if !value.is_nil() {
                        return Ok(value);
                    }
                }
                Ok(Value::nil(self.call_span()))
            }
            "case" | "ecase" => self.case(name, form, args, env),
            "progn" => self.eval_body(args, env),
            "let" | "let*" => {
                self.expect_args(form, args, 1, None)?;
                let Some(bindings) = list_items(&args[0]) else {
                    return Err(self.error(
                        &args[0].span,
                        format!("`{name}` needs a list of bindings, found `{}`", args[0]),
                    ));
                };
                let mut inner = env.clone();
                for binding in bindings {
                    let (var, init) = self.binding(binding)?;
                    let eval_env = if name == "let" { env } else { &inner };
                    let value = match init {
                        Some(init) => self.eval(init, eval_env)?,
                        None => Value::nil(self.call_span()),
                    };
                    inner.bind(var, value);
                }
                self.eval_body(&args[1..], &inner)
            }
            "flet" | "labels" => {
                self.expect_args(form, args, 1, None)?;
                let Some(definitions) = list_items(&args[0]) else {
                    return Err(self.error(
                        &args[0].span,
                        format!("`{name}` needs a list of function definitions"),
                    ));
                };
                let mut parsed = Vec::new();
                for definition in definitions {
                    let Some([fname, params, body @ ..]) = definition.as_list() else {
                        return Err(self.error(
                            &definition.span,
                            format!("expected (name lambda-list body…), found `{definition}`"),
                        ));
                    };
                    let Some(fname) = fname.as_symbol() else {
                        return Err(self.error(
                            &fname.span,
                            format!("expected a function name, found `{fname}`"),
                        ));
                    };
                    parsed.push((fname, params, body));
                }
                let mut inner = env.clone();
                let cells: Vec<Rc<FunCell>> = parsed
                    .iter()
                    .map(|(fname, ..)| inner.bind_function(fname, None))
                    .collect();
                // `flet` functions see the outer environment; `labels` functions see each other.
                let closure_env = if name == "flet" {
                    env.clone()
                } else {
                    inner.clone()
                };
                for (cell, (fname, params, body)) in cells.iter().zip(&parsed) {
                    let function = self.closure(fname, params, body, &closure_env)?;
                    *cell.function.borrow_mut() = Some(function);
                }
                let result = self.eval_body(&args[1..], &inner);
                if name == "labels" {
                    // Break the reference cycles between labels closures and their environment.
                    for cell in &cells {
                        cell.function.borrow_mut().take();
                    }
                }
                result
            }
            "setq" | "setf" => {
                if !args.len().is_multiple_of(2) {
                    return Err(self.error(
                        &form.span,
                        format!("`{name}` needs pairs of place and value"),
                    ));
                }
                let mut value = Value::nil(self.call_span());
                for pair in args.chunks(2) {
                    value = self.eval(&pair[1], env)?;
                    self.assign(&pair[0], value.clone(), env)?;
                }
                Ok(value)
            }
            "push" => {
                self.expect_args(form, args, 2, Some(2))?;
                let item = self.eval(&args[0], env)?;
                let list = self.eval(&args[1], env)?;
                let value = self.call_builtin("cons", vec![item, list], &form.span)?;
                self.assign(&args[1], value.clone(), env)?;
                Ok(value)
            }
            "pop" => {
                self.expect_args(form, args, 1, Some(1))?;
                let list = self.eval(&args[0], env)?;
                let items = self.list_arg(&list, &args[0].span)?;
                let (first, rest) = match items.split_first() {
                    Some((first, rest)) => (Value::Data(first.clone()), rest.to_vec()),
                    None => (Value::nil(self.call_span()), Vec::new()),
                };
                let rest = self.list(rest);
                self.assign(&args[0], rest, env)?;
                Ok(first)
            }
            "incf" | "decf" => {
                self.expect_args(form, args, 1, Some(2))?;
                let old = self.eval(&args[0], env)?;
                let delta = match args.get(1) {
                    Some(d) => self.eval(d, env)?,
                    None => self.data(FormKind::Int {
                        value: 1,
                        suffix: IntSuffix::None,
                    }),
                };
                let op = if name == "incf" { "+" } else { "-" };
                let value = self.call_builtin(op, vec![old, delta], &form.span)?;
                self.assign(&args[0], value.clone(), env)?;
                Ok(value)
            }
            "dolist" | "dotimes" => {
                self.expect_args(form, args, 1, None)?;
                let spec = args[0].as_list().unwrap_or(&[]);
                let [var, source, result @ ..] = spec else {
                    return Err(self.error(
                        &args[0].span,
                        format!(
                            "`{name}` needs (var {} [result])",
                            if name == "dolist" { "list" } else { "count" }
                        ),
                    ));
                };
                let var = self.variable(var)?;
                let source_value = self.eval(source, env)?;
                if name == "dolist" {
                    let items = self.list_arg(&source_value, &source.span)?.to_vec();
                    for item in items {
                        self.tick(&form.span)?;
                        let mut inner = env.clone();
                        inner.bind(var, Value::Data(item));
                        self.eval_body(&args[1..], &inner)?;
                    }
                } else {
                    let count = self.int_arg(&source_value, &source.span)?;
                    for i in 0..count.max(0) {
                        self.tick(&form.span)?;
                        let mut inner = env.clone();
                        inner.bind(
                            var,
                            self.data(FormKind::Int {
                                value: i,
                                suffix: IntSuffix::None,
                            }),
                        );
                        self.eval_body(&args[1..], &inner)?;
                    }
                }
                match result.first() {
                    Some(result) => {
                        let mut inner = env.clone();
                        inner.bind(var, Value::nil(self.call_span()));
                        self.eval(result, &inner)
                    }
                    None => Ok(Value::nil(self.call_span())),
                }
            }
            "loop" => self.eval_loop(form, args, env),
            "destructuring-bind" => {
                self.expect_args(form, args, 2, None)?;
                let list = LambdaList::parse(&args[0], true)
                    .map_err(|e| self.error(&e.span, e.message))?;
                let value = self.eval(&args[1], env)?;
                let Some(items) = value.as_list() else {
                    return Err(self.error(
                        &args[1].span,
                        format!("destructuring-bind needs a list, got `{value}`"),
                    ));
                };
                let items: Vec<Value> = items.iter().cloned().map(Value::Data).collect();
                let mut inner = env.clone();
                let span = value
                    .span()
                    .cloned()
                    .unwrap_or_else(|| args[1].span.clone());
                let what = self.in_macro("destructuring-bind");
                let mut binder = EnvBinder {
                    interp: self,
                    env: &mut inner,
                };
                list.bind(&items, &value, &mut binder, &span, &what)?;
                self.eval_body(&args[2..], &inner)
            }
            "check-type" => {
                self.expect_args(form, args, 2, Some(3))?;
                let value = self.eval(&args[0], env)?;
                if self.has_type(&value, &args[1])? {
                    Ok(Value::nil(self.call_span()))
                } else {
                    Err(Error::new(
                        self.call_span(),
                        format!(
                            "macro `{}`: the value of {}, `{value}`, is not of type {}",
                            self.cx.name(),
                            args[0],
                            args[1]
                        ),
                    ))
                }
            }
            "assert" => {
                self.expect_args(form, args, 1, None)?;
                if self.eval(&args[0], env)?.is_nil() {
                    Err(Error::new(
                        self.call_span(),
                        format!(
                            "macro `{}`: the assertion {} failed",
                            self.cx.name(),
                            args[0]
                        ),
                    ))
                } else {
                    Ok(Value::nil(self.call_span()))
                }
            }
            "with-gensyms" => {
                self.expect_args(form, args, 1, None)?;
                let Some(names) = list_items(&args[0]) else {
                    return Err(self.error(&args[0].span, "with-gensyms needs a list of names"));
                };
                let mut inner = env.clone();
                for spec in names {
                    // `name` or `(name prefix)`.
                    let (var, prefix) = match spec.as_list() {
                        Some([var, prefix]) => {
                            let prefix_value = self.eval(prefix, env)?;
                            (
                                self.variable(var)?,
                                self.string_designator(&prefix_value, &prefix.span)?,
                            )
                        }
                        _ => {
                            let var = self.variable(spec)?;
                            (var, var.to_string())
                        }
                    };
                    inner.bind(var, Value::Data(self.cx.gensym(&prefix)));
                }
                self.eval_body(&args[1..], &inner)
            }
            "once-only" => self.once_only(form, args, env),
            _ => Err(self.error(&form.span, format!("`{name}` is not implemented"))),
        }
    }
}
